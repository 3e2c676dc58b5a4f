"""allreduce / allreduce_ on torch tensors: every dtype, op and shape against numpy."""

import zlib

import numpy as np
import pytest
import torch

import flock.torch as bf
from reference import (ALL_DTYPES, FLOAT_DTYPES, OPS, SHAPES, bool_reference, rank_input,
                       reduce_reference, to_torch, tolerance)


def _expected(seed, size, dtype, shape, op):
    inputs = [rank_input(seed, r, dtype, shape, op) for r in range(size)]
    if dtype == "bool":
        return bool_reference(inputs, op)
    return reduce_reference(inputs, op)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_allreduce_matches_numpy(dtype, op, shape, rank, size):
    seed = zlib.crc32(repr((dtype, op, shape)).encode())  # the same on every rank
    mine = rank_input(seed, rank, dtype, shape, op)
    tensor = to_torch(mine, dtype)
    before = tensor.clone()
    if op == "average" and dtype not in FLOAT_DTYPES:
        with pytest.raises(bf.FlockError, match="average is defined for floating-point"):
            bf.allreduce(tensor, op=op, name="avg.int")
        return
    result = bf.allreduce(tensor, op=op, name="t.{}.{}.{}".format(dtype, op, len(shape)))
    assert result.dtype == tensor.dtype and result.shape == tensor.shape
    assert torch.equal(tensor, before), "the input must not be modified"
    expected = _expected(seed, size, dtype, shape, op)
    got = result.to(torch.float64).numpy() if dtype != "bool" else result.numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance(dtype, size))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_allreduce_in_place_writes_the_input(dtype, rank, size):
    op = "max"
    mine = rank_input(11, rank, dtype, (5, 3), op)
    tensor = to_torch(mine, dtype)
    storage = tensor.data_ptr()
    out = bf.allreduce_(tensor, op=op)
    assert out is tensor and tensor.data_ptr() == storage
    expected = _expected(11, size, dtype, (5, 3), op)
    np.testing.assert_array_equal(tensor.to(torch.float64).numpy(), expected.astype(np.float64))


def test_average_is_the_default_and_average_false_is_sum(rank, size):
    x = torch.full((4,), float(rank))
    mean = (size - 1) / 2.0
    assert torch.allclose(bf.allreduce(x), torch.full((4,), mean))
    assert torch.allclose(bf.allreduce(x, average=False), torch.full((4,), mean * size))
    assert torch.allclose(bf.allreduce(x, op=bf.Sum), torch.full((4,), mean * size))


def test_non_contiguous_input_and_in_place(rank, size):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) * (rank + 1)
    column = base[:, 1]  # stride 4: not contiguous
    assert not column.is_contiguous()
    total = sum(r + 1 for r in range(size))
    expected = torch.tensor([1.0, 5.0, 9.0]) * total
    assert torch.equal(bf.allreduce(column, op="sum"), expected)
    bf.allreduce_(column, op="sum")
    assert torch.equal(base[:, 1], expected), "in-place result must land in the strided view"
    assert torch.equal(base[:, 0], torch.tensor([0.0, 4.0, 8.0]) * (rank + 1))


def test_requires_grad_tensor_is_accepted(size):
    x = torch.ones(3, requires_grad=True)
    assert torch.equal(bf.allreduce(x, op="sum"), torch.full((3,), float(size)))


def test_local_allreduce_reduces_within_the_machine(rank):
    x = torch.ones(2)
    assert torch.equal(bf.allreduce(x, op="sum", is_hierarchical_local=True),
                       torch.full((2,), float(bf.local_size())))


def test_many_names_in_sequence(rank, size):
    for i in range(50):
        x = torch.full((3,), float(rank + i))
        got = bf.allreduce(x, op="sum", name="seq.{}".format(i))
        assert got[0].item() == sum(r + i for r in range(size))
