"""broadcast / broadcast_ / allgather on torch tensors against numpy."""

import numpy as np
import pytest
import torch

import flock.torch as bf
from reference import ALL_DTYPES, SHAPES, rank_input, to_torch


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_broadcast_from_every_root(dtype, shape, rank, size):
    for root in range(size):
        mine = to_torch(rank_input(root * 7 + 1, rank, dtype, shape), dtype)
        before = mine.clone()
        got = bf.broadcast(mine, root_rank=root)
        expected = to_torch(rank_input(root * 7 + 1, root, dtype, shape), dtype)
        assert torch.equal(got, expected)
        assert torch.equal(mine, before), "broadcast must not modify its input"


def test_broadcast_in_place(rank, size):
    root = size - 1
    x = torch.full((3, 2), float(rank))
    ptr = x.data_ptr()
    assert bf.broadcast_(x, root) is x
    assert x.data_ptr() == ptr and torch.equal(x, torch.full((3, 2), float(root)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_allgather_rows_may_differ(dtype, rank, size):
    rows = lambda r: r % 3  # noqa: E731  (some ranks send no rows at all)
    mine = to_torch(rank_input(5, rank, dtype, (rows(rank), 4)), dtype)
    got = bf.allgather(mine)
    expected = np.concatenate([rank_input(5, r, dtype, (rows(r), 4)) for r in range(size)])
    assert got.dtype == mine.dtype and tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.to(torch.float64).numpy(), expected)


@pytest.mark.parametrize("shape", [(), (1,), (7,), (1000, 1000)], ids=str)
def test_allgather_shapes(shape, rank, size):
    mine = torch.full(shape, float(rank), dtype=torch.float32)
    got = bf.allgather(mine)
    rows = 1 if shape == () else shape[0]
    assert tuple(got.shape) == ((size,) if shape == () else (size * rows,) + shape[1:])
    expected = torch.repeat_interleave(torch.arange(size, dtype=torch.float32), rows)
    assert torch.equal(got.reshape(size * rows, -1)[:, 0], expected)


def test_barrier_returns(size):
    for _ in range(3):
        bf.barrier()
