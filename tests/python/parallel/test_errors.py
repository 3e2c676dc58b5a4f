"""Bad input and mismatches between ranks: a FlockError on every rank, no hang,
and the next op still works."""

import pytest
import torch

import flock.torch as bf
from conftest import needs_ranks


def _next_op_works(size):
    assert bf.allreduce(torch.ones(2), op="sum", name="after.error")[0].item() == size


@needs_ranks(2)
@pytest.mark.parametrize("field", ["shape", "dtype", "reduction op"])
def test_allreduce_mismatch_is_reported_on_every_rank(field, rank, size):
    odd = rank == size - 1
    shape = (3, 4) if field == "shape" and odd else (3, 3)
    dtype = torch.float64 if field == "dtype" and odd else torch.float32
    op = "max" if field == "reduction op" and odd else "sum"
    name = "grad.w"  # names are the matching key: different names are different ops
    with pytest.raises(bf.FlockMismatchError) as info:
        bf.allreduce(torch.ones(shape, dtype=dtype), op=op, name=name)
    message = str(info.value)
    assert "disagree on the " + field in message
    assert "rank {}".format(size - 1) in message
    assert "'grad.w'" in message
    _next_op_works(size)


@needs_ranks(2)
def test_broadcast_root_mismatch(rank, size):
    with pytest.raises(bf.FlockMismatchError, match="root rank"):
        bf.broadcast(torch.ones(2), root_rank=1 if rank == 0 else 0, name="b")
    _next_op_works(size)


@needs_ranks(2)
def test_allgather_trailing_shape_mismatch(rank, size):
    with pytest.raises(bf.FlockMismatchError, match="only dim 0 may differ"):
        bf.allgather(torch.ones(2, 2 + (rank == 1)))
    _next_op_works(size)


def test_root_out_of_range_fails_everywhere(size):
    with pytest.raises(bf.FlockInvalidArgumentError, match="root_rank {} is out of range".format(size)):
        bf.broadcast(torch.ones(1), root_rank=size)
    _next_op_works(size)


def test_unsupported_dtype_on_one_rank_cancels_all(rank, size):
    dtype = torch.complex64 if rank == 0 else torch.float32
    if rank == 0:
        with pytest.raises(bf.FlockUnsupportedError, match="complex64 is not supported"):
            bf.allreduce(torch.ones(3, dtype=dtype), op="sum", name="c64")
    else:
        with pytest.raises(bf.FlockAbortedError, match="rank 0 rejected its input"):
            bf.allreduce(torch.ones(3, dtype=dtype), op="sum", name="c64")
    _next_op_works(size)


def test_not_a_tensor_on_one_rank_cancels_all(rank, size):
    value = [1.0, 2.0] if rank == 0 else torch.ones(2)
    expected = bf.FlockInvalidArgumentError if rank == 0 else bf.FlockAbortedError
    with pytest.raises(expected):
        bf.allreduce(value, name="list")
    _next_op_works(size)


def test_complex_dtype_is_refused(size):
    with pytest.raises(bf.FlockUnsupportedError, match="complex"):
        bf.allreduce(torch.ones(2, dtype=torch.complex64))
    _next_op_works(size)


def test_contradicting_average_and_op_is_refused_locally():
    with pytest.raises(bf.FlockError, match="contradicts"):
        bf.allreduce(torch.ones(1), average=True, op="sum")
    with pytest.raises(bf.FlockError, match="unknown reduction op"):
        bf.allreduce(torch.ones(1), op="median")
