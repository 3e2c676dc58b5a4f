"""reducescatter and alltoall of CUDA tensors (NCCL, or MPI through pinned memory
under FLOCK_GPU_VIA_MPI=1), on the fake device, against numpy: the same reference
as the CPU path's tests (tests/python/parallel/test_reducescatter_alltoall.py)."""

import numpy as np
import pytest

import flock.errors
import flock._collectives as ops
from fake_cuda import ADAPTER, DeviceArray


def inputs(size, shape, dtype, salt):
    return [np.random.default_rng(100 * salt + r).integers(1, 3, shape).astype(dtype)
            for r in range(size)]


def even_rows(rows, size):
    return [rows // size + (1 if r < rows % size else 0) for r in range(size)]


@pytest.mark.parametrize("rows", [1, 7, 12], ids=lambda n: "rows{}".format(n))
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_reducescatter_matches_numpy(rank, size, device, stream, dtype, rows):
    every = inputs(size, (rows, 3), dtype, salt=rows)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = ops.synchronize(ops.reducescatter_nonblocking(ADAPTER, x, op="sum",
                                                        name="rs.{}.{}".format(dtype, rows)))
    counts = even_rows(rows, size)
    start = sum(counts[:rank])
    expected = np.sum(np.stack(every), axis=0).astype(dtype)[start:start + counts[rank]]
    assert out.device == device and out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(x.numpy(), every[rank])  # the input is left alone


def distinct(size, shape, salt):
    """Every rank's input with a different value in every element (a row taken from the
    wrong place cannot match by chance): arange offset by rank and tensor."""
    n = int(np.prod(shape))
    return [(np.arange(n, dtype=np.float64).reshape(shape) + 1000 * r + 100 * salt)
            .astype(np.float32) for r in range(size)]


@pytest.mark.parametrize("op", ["sum", "average"])
def test_fused_reducescatters_in_flight_together(rank, size, device, stream, op):
    shapes = [(i + 1, 2) for i in range(8)]
    every = [distinct(size, s, salt=i) for i, s in enumerate(shapes)]
    arrays = [DeviceArray.from_numpy(e[rank], device, stream) for e in every]
    handles = [ops.reducescatter_nonblocking(ADAPTER, a, op=op,
                                             name="rs.fused.{}.{}".format(op, i))
               for i, a in enumerate(arrays)]
    reduce = np.mean if op == "average" else np.sum
    for i, handle in enumerate(handles):
        out = ops.synchronize(handle)
        counts = even_rows(shapes[i][0], size)
        start = sum(counts[:rank])
        expected = reduce(np.stack(every[i]).astype(np.float64), axis=0)
        np.testing.assert_allclose(out.numpy(), expected[start:start + counts[rank]], rtol=1e-6)


def test_alltoall_with_splits(rank, size, device, stream):
    def splits_of(r):
        return [(r + 2 * k) % 3 for k in range(size)]

    every = [np.arange(sum(splits_of(r)) * 2, dtype=np.float64).reshape(-1, 2) + 1000 * r
             for r in range(size)]
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out, received = ops.synchronize(ops.alltoall_nonblocking(ADAPTER, x, splits_of(rank),
                                                             name="a2a.splits"))
    parts = []
    for r in range(size):
        start = sum(splits_of(r)[:rank])
        parts.append(every[r][start:start + splits_of(r)[rank]])
    expected = np.concatenate(parts)
    assert received.tolist() == [splits_of(r)[rank] for r in range(size)]
    assert out.device == device and out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_alltoall_even_split(rank, size, device, stream):
    every = distinct(size, (2 * size, 3), salt=9)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = ops.synchronize(ops.alltoall_nonblocking(ADAPTER, x, None, name="a2a.even"))
    expected = np.concatenate([every[r][2 * rank:2 * rank + 2] for r in range(size)])
    assert out.device == device and out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_alltoall_bad_splits_fail_on_every_rank(rank, size, device, stream):
    x = DeviceArray.from_numpy(np.ones((size, 2), np.float32), device, stream)
    splits = [1] * size if rank != size - 1 else [size + 1] + [0] * (size - 1)
    with pytest.raises(flock.errors.FlockError, match="splits|rejected its input"):
        ops.synchronize(ops.alltoall_nonblocking(ADAPTER, x, splits, name="a2a.bad"))
