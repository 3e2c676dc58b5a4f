"""reducescatter and alltoall on torch tensors (and numpy arrays) against numpy.

Each rank rebuilds every rank's input (reference.rank_input), so the expected
block or rows are computed here independently of flock: the full reduction in
numpy split as Horovod splits dim 0, and the rows each rank sends picked out of
its input by its splits.
"""

import zlib

import numpy as np
import pytest
import torch

import flock.numpy as bfn
import flock.torch as bf
from conftest import needs_ranks
from reference import (ALL_DTYPES, FLOAT_DTYPES, OPS, bool_reference, rank_input,
                       reduce_reference, to_torch, tolerance)

SCATTER_SHAPES = [(0,), (1,), (7,), (13, 3), (24, 5)]  # empty, fewer rows than ranks, uneven


def _even_split(rows, size):
    """Rows of dim 0 per rank: the first rows % size ranks get one more."""
    return [rows // size + (1 if r < rows % size else 0) for r in range(size)]


def _my_rows(full, rank, size):
    counts = _even_split(full.shape[0], size)
    start = sum(counts[:rank])
    return full[start:start + counts[rank]]


def _reduced(seed, size, dtype, shape, op):
    inputs = [rank_input(seed, r, dtype, shape, op) for r in range(size)]
    return bool_reference(inputs, op) if dtype == "bool" else reduce_reference(inputs, op)


@pytest.mark.parametrize("shape", SCATTER_SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reducescatter_matches_numpy(dtype, op, shape, rank, size):
    seed = zlib.crc32(repr(("rs", dtype, op, shape)).encode())
    tensor = to_torch(rank_input(seed, rank, dtype, shape, op), dtype)
    before = tensor.clone()
    name = "rs.{}.{}.{}".format(dtype, op, shape)
    if op == "average" and dtype not in FLOAT_DTYPES:
        with pytest.raises(bf.FlockError, match="average is defined for floating-point"):
            bf.reducescatter(tensor, op=op, name=name)
        return
    result = bf.reducescatter(tensor, op=op, name=name)
    expected = _my_rows(_reduced(seed, size, dtype, shape, op), rank, size)
    assert result.dtype == tensor.dtype and tuple(result.shape) == expected.shape
    assert torch.equal(tensor, before), "the input must not be modified"
    got = result.numpy() if dtype == "bool" else result.to(torch.float64).numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance(dtype, size))


def test_reducescatter_averages_by_default(rank, size):
    x = torch.arange(2 * size, dtype=torch.float64) + rank
    mean = (size - 1) / 2.0
    expected = torch.arange(2 * size, dtype=torch.float64)[2 * rank:2 * rank + 2] + mean
    assert torch.equal(bf.reducescatter(x), expected)
    assert torch.equal(bf.reducescatter(x, average=False), expected * size)


@pytest.mark.parametrize("op", ["sum", "average"])
def test_many_nonblocking_reducescatters_are_fused_and_each_correct(op, rank, size):
    shapes = [(i % 5 + 1, 3) if i % 2 else (2 * size + i,) for i in range(24)]
    tensors = [to_torch(rank_input(i, rank, "float32", s), "float32")
               for i, s in enumerate(shapes)]
    before = bf.engine_counters()
    handles = [bf.reducescatter_nonblocking(t, name="rs.burst.{}.{}".format(op, i), op=op)
               for i, t in enumerate(tensors)]
    results = [bf.synchronize(h) for h in handles]
    after = bf.engine_counters()
    for i, (s, got) in enumerate(zip(shapes, results)):
        expected = _my_rows(_reduced(i, size, "float32", s, op), rank, size)
        np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=tolerance("float32", size))
    # 24 ops agreed on in one negotiation round go out in far fewer batches.
    assert after["batches"] - before["batches"] < len(shapes)


def test_reducescatter_of_a_0d_tensor_fails_on_every_rank(rank, size):
    with pytest.raises(bf.FlockInvalidArgumentError, match="at least one dimension"):
        bf.reducescatter(torch.tensor(1.0), name="rs.0d")
    _next_op_works(size)


@needs_ranks(2)
def test_reducescatter_shape_mismatch_fails_on_every_rank(rank, size):
    x = torch.ones(4 * size + (1 if rank == 1 else 0))
    with pytest.raises(bf.FlockMismatchError, match="reducescatter 'rs.bad'.*shape"):
        bf.reducescatter(x, name="rs.bad")
    _next_op_works(size)


def test_a_named_reducescatter_repeats_and_may_change_shape(rank, size):
    """The second call of a name hits the response cache; a new shape is a new signature."""
    for rows in (size + 1, size + 1, 3 * size + 2):
        x = torch.arange(rows * 2, dtype=torch.float64).reshape(rows, 2) * (rank + 1)
        got = bf.reducescatter(x, op="sum", name="rs.repeat")
        whole = torch.arange(rows * 2, dtype=torch.float64).reshape(rows, 2) * (
            size * (size + 1) / 2)
        counts = _even_split(rows, size)
        start = sum(counts[:rank])
        assert torch.equal(got, whole[start:start + counts[rank]])


@needs_ranks(2)
def test_reducescatter_dtype_mismatch_fails_on_every_rank(rank, size):
    x = torch.ones(size, dtype=torch.float64 if rank == 1 else torch.float32)
    with pytest.raises(bf.FlockMismatchError, match="dtype"):
        bf.reducescatter(x, name="rs.dtype")
    _next_op_works(size)


@needs_ranks(2)
def test_a_bad_op_on_one_rank_fails_every_rank(rank, size):
    op = "median" if rank == size - 1 else "sum"
    expected = bf.FlockInvalidArgumentError if rank == size - 1 else bf.FlockAbortedError
    for call in (bf.reducescatter, bf.allreduce):
        with pytest.raises(expected):
            call(torch.ones(size), op=op, name="bad.op." + call.__name__)
    _next_op_works(size)


@needs_ranks(2)
def test_reducescatter_op_mismatch_fails_on_every_rank(rank, size):
    with pytest.raises(bf.FlockMismatchError, match="reduction"):
        bf.reducescatter(torch.ones(size), op="max" if rank == 1 else "sum", name="rs.op")
    _next_op_works(size)


def test_reducescatter_nonblocking_and_poll(rank, size):
    x = torch.full((3 * size, 2), float(rank + 1))
    handle = bf.reducescatter_nonblocking(x, op="sum", name="rs.nb")
    result = bf.synchronize(handle)
    assert tuple(result.shape) == (3, 2)
    assert torch.equal(result, torch.full((3, 2), size * (size + 1) / 2.0))


def test_reducescatter_fp16_compression_stays_within_its_bound(rank, size):
    seed = 901
    x = to_torch(rank_input(seed, rank, "float32", (5 * size + 3, 4)), "float32")
    result = bf.reducescatter(x, op="sum", name="rs.fp16", compression=bf.Compression.fp16)
    assert result.dtype == torch.float32
    expected = _my_rows(_reduced(seed, size, "float32", (5 * size + 3, 4), "sum"), rank, size)
    # Inputs are rounded to fp16, then up to size-1 fp16 roundings of partial sums.
    unit = 2.0 ** -11
    bound = (size + 2) * unit * 4 * size
    np.testing.assert_allclose(result.numpy(), expected, rtol=0, atol=bound)


def _alltoall_expected(seed, rank, size, dtype, rows_of, splits_of, tail):
    """The rows each rank r sends this rank, in rank order, and how many."""
    parts, counts = [], []
    for r in range(size):
        full = rank_input(seed, r, dtype, (rows_of(r),) + tail)
        splits = splits_of(r)
        start = sum(splits[:rank])
        parts.append(full[start:start + splits[rank]])
        counts.append(splits[rank])
    return np.concatenate(parts), counts


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_alltoall_even_split_matches_numpy(dtype, rank, size):
    seed = zlib.crc32(repr(("a2a", dtype)).encode())
    tail = (3,)
    rows_of = lambda r: 2 * size  # noqa: E731
    tensor = to_torch(rank_input(seed, rank, dtype, (rows_of(rank),) + tail), dtype)
    result = bf.alltoall(tensor, name="a2a.{}".format(dtype))
    expected, _ = _alltoall_expected(seed, rank, size, dtype, rows_of,
                                     lambda r: [2] * size, tail)
    assert result.dtype == tensor.dtype and tuple(result.shape) == expected.shape
    got = result.numpy() if dtype == "bool" else result.to(torch.float64).numpy()
    np.testing.assert_array_equal(got.astype(np.float64), expected)


def _uneven_splits(r, size):
    return [(r + 2 * k) % 3 for k in range(size)]  # zeros included


@pytest.mark.parametrize("tail", [(), (4,), (2, 3)], ids=str)
def test_alltoall_with_splits_returns_the_received_splits(tail, rank, size):
    seed = 77
    splits_of = lambda r: _uneven_splits(r, size)  # noqa: E731
    rows_of = lambda r: sum(splits_of(r))  # noqa: E731
    tensor = to_torch(rank_input(seed, rank, "float64", (rows_of(rank),) + tail), "float64")
    result, received = bf.alltoall(tensor, splits=splits_of(rank), name="a2a.splits")
    expected, counts = _alltoall_expected(seed, rank, size, "float64", rows_of, splits_of, tail)
    assert received.dtype == torch.int32 and received.tolist() == counts
    np.testing.assert_array_equal(result.numpy(), expected)


def test_alltoall_splits_may_be_a_tensor_and_nonblocking(rank, size):
    splits = torch.tensor([1] * size)
    x = torch.arange(size, dtype=torch.float32) + 100 * rank
    handle = bf.alltoall_nonblocking(x, splits=splits, name="a2a.nb")
    result, received = bf.synchronize(handle)
    assert received.tolist() == [1] * size
    assert result.tolist() == [float(100 * r + rank) for r in range(size)]


def test_alltoall_uneven_rows_without_splits_fail_on_every_rank(rank, size):
    rows = size + 1 if rank == 0 else size
    if rank == 0 and size > 1:
        with pytest.raises(bf.FlockInvalidArgumentError, match="does not divide evenly"):
            bf.alltoall(torch.ones(rows), name="a2a.uneven")
    elif size > 1:
        with pytest.raises(bf.FlockAbortedError, match="rank 0 rejected its input"):
            bf.alltoall(torch.ones(rows), name="a2a.uneven")
    _next_op_works(size)


@pytest.mark.parametrize("bad, message", [
    (lambda size: [1] * (size + 1), "entries for"),
    (lambda size: [-1] + [1] * (size - 1), "negative"),
    (lambda size: [2] * size, "more than dim 0"),
], ids=["length", "negative", "sum"])
def test_alltoall_bad_splits_on_the_last_rank_fail_on_every_rank(bad, message, rank, size):
    x = torch.ones(max(size - 2, 0))  # the negative case's rows: the others send them all
    last = size - 1
    splits = bad(size) if rank == last else [x.shape[0]] + [0] * (size - 1)
    if rank == last:
        with pytest.raises(bf.FlockInvalidArgumentError, match=message):
            bf.alltoall(x, splits=splits, name="a2a.bad")
    else:
        with pytest.raises(bf.FlockAbortedError, match="rejected its input"):
            bf.alltoall(x, splits=splits, name="a2a.bad")
    _next_op_works(size)


@needs_ranks(2)
def test_alltoall_dtype_mismatch_fails_on_every_rank(rank, size):
    x = torch.ones(size, dtype=torch.int32 if rank == 0 else torch.int64)
    with pytest.raises(bf.FlockMismatchError, match="dtype"):
        bf.alltoall(x, name="a2a.dtype")
    _next_op_works(size)


def test_alltoall_splits_may_be_numpy_or_0d_tensor_integers(rank, size):
    x = torch.arange(size, dtype=torch.float32) + 100 * rank
    for splits in ([np.int64(1)] * size, [torch.tensor(1)] * size, np.ones(size, np.int32)):
        result, received = bf.alltoall(x, splits=splits, name="a2a.ints")
        assert received.tolist() == [1] * size
        assert result.tolist() == [float(100 * r + rank) for r in range(size)]


def test_a_split_outside_int64_on_one_rank_fails_every_rank(rank, size):
    x = torch.ones(size)
    last = size - 1
    splits = [1] * size if rank != last else [2 ** 63] + [0] * (size - 1)
    expected = bf.FlockInvalidArgumentError if rank == last else bf.FlockAbortedError
    with pytest.raises(expected):
        bf.alltoall(x, splits=splits, name="a2a.huge")
    _next_op_works(size)


@needs_ranks(2)
def test_alltoall_other_dims_must_agree(rank, size):
    x = torch.ones(size, 3 if rank == 1 else 2)
    with pytest.raises(bf.FlockMismatchError, match="only dim 0 may differ"):
        bf.alltoall(x, name="a2a.dims")
    _next_op_works(size)


def test_alltoall_splits_must_be_integers(rank, size):
    with pytest.raises(bf.FlockError, match="splits must be integers"):
        bf.alltoall(torch.ones(size), splits=[1.0] * size, name="a2a.float")
    _next_op_works(size)


def test_numpy_reducescatter_and_alltoall(rank, size):
    x = np.arange(3 * size, dtype=np.float64) + rank
    got = bfn.reducescatter(x, op="sum", name="np.rs")
    total = (np.arange(3 * size, dtype=np.float64) * size + size * (size - 1) / 2)
    np.testing.assert_array_equal(got, total[3 * rank:3 * rank + 3])
    rows, received = bfn.alltoall(x, splits=[3] * size, name="np.a2a")
    assert received.tolist() == [3] * size
    expected = np.concatenate([np.arange(3 * rank, 3 * rank + 3) + r for r in range(size)])
    np.testing.assert_array_equal(rows, expected)


def _next_op_works(size):
    assert bf.allreduce(torch.ones(2), op="sum", name="after.error").tolist() == [size] * 2
