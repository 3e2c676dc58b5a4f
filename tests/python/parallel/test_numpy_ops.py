"""The same collectives on numpy arrays (flock.numpy)."""

import zlib

import numpy as np
import pytest

import flock.numpy as fnp
from reference import (FLOAT_DTYPES, INT_DTYPES, OPS, SHAPES, bool_reference, rank_input,
                       reduce_reference, tolerance)

NUMPY_DTYPES = ["bool"] + INT_DTYPES + [d for d in FLOAT_DTYPES if d != "bfloat16"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_allreduce_matches_numpy(dtype, op, shape, rank, size):
    seed = zlib.crc32(repr(("np", dtype, op, shape)).encode())
    mine = rank_input(seed, rank, dtype, shape, op).astype(dtype)
    if op == "average" and dtype not in FLOAT_DTYPES:
        with pytest.raises(fnp.FlockError, match="average"):
            fnp.allreduce(mine, op=op)
        return
    got = fnp.allreduce(mine, op=op)
    inputs = [rank_input(seed, r, dtype, shape, op) for r in range(size)]
    expected = bool_reference(inputs, op) if dtype == "bool" else reduce_reference(inputs, op)
    assert got.dtype == mine.dtype and got.shape == mine.shape
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=0,
                               atol=tolerance(dtype, size))


def test_in_place_readonly_and_scalar_inputs(rank, size):
    a = np.full((2, 3), rank, dtype=np.int64)
    assert fnp.allreduce_(a, op="sum") is a
    assert (a == size * (size - 1) // 2).all()
    readonly = np.broadcast_to(np.float32(rank), (4,))  # read-only view: copied, not refused
    assert np.allclose(fnp.allreduce(readonly), (size - 1) / 2)
    assert fnp.allreduce(np.float64(1.0), op="sum") == size


def test_broadcast_and_allgather(rank, size):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + rank
    got = fnp.broadcast(x, 0)
    assert np.array_equal(got, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert np.array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3) + rank)
    fnp.broadcast_(x, size - 1)
    assert np.array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3) + size - 1)
    rows = fnp.allgather(np.full((rank % 2, 2), rank, dtype=np.int32))
    expected = np.concatenate([np.full((r % 2, 2), r, dtype=np.int32) for r in range(size)])
    assert np.array_equal(rows, expected)
    flags = fnp.allgather(np.array([rank % 2 == 0]))
    assert flags.dtype == np.bool_ and list(flags) == [r % 2 == 0 for r in range(size)]
