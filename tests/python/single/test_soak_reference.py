"""The soak's reference (benchmarks/soak_inputs.py, soak_ops.py) checked without MPI: its
premises (every value and sum of up to six exact in every dtype), that check() accepts
results computed independently here (torch on the stacked inputs) and rejects wrong
ones, and that the dynamic weights it draws make the W the neighbor tests' reference
(tests/python/parallel/neighbor_reference.py) computes from the same arguments."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests" / "python" / "parallel")]

import neighbor_reference as nr  # noqa: E402
import soak_inputs as si  # noqa: E402
import soak_ops  # noqa: E402

SIZE = 6  # the largest world the soak runs at: sums of six values must stay exact


def inputs_of(dtype, values="signed", count=1000, seed=3):
    return si.Inputs(np.random.default_rng(seed), dtype, [[count]] * SIZE, values)


@pytest.mark.parametrize("dtype", si.ALL_DTYPES)
def test_every_input_value_is_exact_in_its_dtype(dtype):
    inputs = inputs_of(dtype)
    for r in range(SIZE):
        tensor = inputs.tensor(r)
        assert tensor.dtype == getattr(torch, dtype) and tuple(tensor.shape) == (1000,)
        np.testing.assert_array_equal(tensor.to(torch.float64).numpy(), inputs.chunk(r, 0, 1000))


@pytest.mark.parametrize("op", ["sum", "min", "max", "product"])
@pytest.mark.parametrize("dtype", si.ALL_DTYPES)
def test_reductions_of_six_ranks_are_exact_and_checked_for_equality(dtype, op):
    inputs = inputs_of(dtype, "product" if op == "product" else "signed")
    stacked = torch.stack([inputs.tensor(r) for r in range(SIZE)])
    if dtype == "bool":
        right = stacked.any(0) if op in ("sum", "max") else stacked.all(0)
    elif op in ("min", "max"):
        right = getattr(stacked, op)(0).values
    else:  # accumulated in the dtype itself: no overflow, no rounding
        right = stacked[0].clone()
        for row in stacked[1:]:
            right = right + row if op == "sum" else right * row
    assert right.dtype == getattr(torch, dtype)
    assert si.check(right, inputs, si.Reduce(op), 0) is None
    wrong = right.clone()
    wrong[417] = (~wrong[417]) if dtype == "bool" else wrong[417] + 1
    assert "first at 417" in si.check(wrong, inputs, si.Reduce(op), 0)


def test_a_concatenation_is_checked_in_order_across_chunks():
    counts = [si.CHUNK + 5, 0, 7, si.CHUNK - 3]
    inputs = si.Inputs(np.random.default_rng(1), "int32", [[c] for c in counts])
    order = [3, 1, 0, 2]
    right = torch.cat([inputs.tensor(r) for r in order])
    assert si.check(right, inputs, si.Concat(order), 0) is None
    swapped = torch.cat([inputs.tensor(r) for r in [0, 1, 3, 2]])
    assert si.check(swapped, inputs, si.Concat(order), 0) is not None
    assert "elements instead of" in si.check(right[:-1], inputs, si.Concat(order), 0)
    assert "dtype" in si.check(right.to(torch.int64), inputs, si.Concat(order), 0)


@pytest.mark.parametrize("dtype", si.FLOAT_DTYPES)
def test_a_weighted_mix_is_checked_to_its_tolerance(dtype):
    inputs = inputs_of(dtype, count=2000)
    weights = {0: 0.3, 2: 0.25, 5: 1.7}
    right = sum(w * inputs.tensor(j).to(torch.float64) for j, w in weights.items())
    assert si.check(right.to(getattr(torch, dtype)), inputs, si.Mix(weights), 0) is None
    # A contribution missing (rank 2's, the smallest weight) is far beyond the tolerance.
    missing = right - 0.25 * inputs.tensor(2).to(torch.float64)
    assert si.check(missing.to(getattr(torch, dtype)), inputs, si.Mix(weights), 0) is not None
    # So is rank 0's weight 10 % off, except in bfloat16 (1.3 % of the bound here).
    off = right + 0.1 * 0.3 * inputs.tensor(0).to(torch.float64)
    if dtype != "bfloat16":
        assert si.check(off.to(getattr(torch, dtype)), inputs, si.Mix(weights), 0) is not None
    nan = right.clone()
    nan[3] = float("nan")
    assert "first at 3" in si.check(nan.to(getattr(torch, dtype)), inputs, si.Mix(weights), 0)


def test_dynamic_weights_make_the_mixing_matrix_of_their_arguments():
    for seed in range(20):
        size = 3 + seed % 4
        args, w = soak_ops.draw_dynamic_weights(np.random.default_rng(seed), size)
        np.testing.assert_allclose(w, nr.dynamic_mixing(args), rtol=0, atol=0)


def test_element_counts_span_zero_to_the_byte_limit():
    rng = np.random.default_rng(0)
    counts = [si.draw_count(rng, "float32", 4 << 20) for _ in range(4000)]
    assert min(counts) == 0 and max(counts) <= (1 << 20)
    assert max(counts) > (1 << 19)  # log-uniform: the top octave is drawn too
    assert 0.03 < counts.count(0) / len(counts) < 0.08


def _stacked_reduction(inputs, op):
    stacked = torch.stack([inputs.tensor(r).to(torch.float64) for r in range(SIZE)])
    if inputs.dtype == "bool":
        whole = stacked.bool().any(0) if op in ("sum", "max") else stacked.bool().all(0)
    else:
        whole = {"sum": stacked.sum(0), "average": stacked.mean(0), "product": stacked.prod(0),
                 "min": stacked.min(0).values, "max": stacked.max(0).values}[op]
    return whole.to(getattr(torch, inputs.dtype))


@pytest.mark.parametrize("rows", [0, 4, SIZE, 2 * si.CHUNK // 3 + 5])
@pytest.mark.parametrize("op, dtype", [("sum", "int16"), ("max", "bool"), ("product", "uint8"),
                                       ("average", "float16"), ("average", "float64")])
def test_my_rows_of_a_reduction_are_the_reducescatter_split(op, dtype, rows):
    inputs = si.Inputs(np.random.default_rng(5), dtype, [[rows, 3]] * SIZE,
                       "product" if op == "product" else "signed")
    whole = si.Mix({r: 1.0 / SIZE for r in range(SIZE)}) if op == "average" else si.Reduce(op)
    full = _stacked_reduction(inputs, op)
    split = [rows // SIZE + (1 if r < rows % SIZE else 0) for r in range(SIZE)]
    for rank in range(SIZE):
        mine = full[sum(split[:rank]):sum(split[:rank + 1])]
        assert si.check(mine, inputs, si.MyRows(whole), rank) is None
        others = full[sum(split[:rank - 1]):sum(split[:rank])]  # rank - 1's rows
        if rank and others.shape == mine.shape and not torch.equal(others, mine):
            assert si.check(others, inputs, si.MyRows(whole), rank) is not None
    if rows % SIZE:  # the last rank has one row fewer than the first
        assert "shape" in si.check(full[:split[0]], inputs, si.MyRows(whole), SIZE - 1)
    if rows >= SIZE:  # the right count of elements in the wrong shape
        flat = full[:split[0]].reshape(-1)
        assert "shape" in si.check(flat, inputs, si.MyRows(whole), 0)


def _alltoall_inputs(splits, tail, dtype="int32"):
    shapes = [[sum(sent)] + tail for sent in splits]
    return si.Inputs(np.random.default_rng(9), dtype, shapes)


@pytest.mark.parametrize("tail", [[], [3], [2, 2]], ids=str)
def test_received_rows_are_what_each_rank_sends_this_rank(tail):
    size = 4
    rng = np.random.default_rng(2)
    splits = [soak_ops.draw_splits(rng, rows, size) for rows in [0, 7, si.CHUNK, 30]]
    inputs = _alltoall_inputs(splits, tail)
    for rank in range(size):
        parts = []
        for r, sent in enumerate(splits):
            parts.append(inputs.tensor(r)[sum(sent[:rank]):sum(sent[:rank + 1])])
        right = torch.cat(parts)
        received = torch.tensor([sent[rank] for sent in splits], dtype=torch.int32)
        assert si.check((right, received), inputs, si.Received(splits, True), rank) is None
        assert si.check(right, inputs, si.Received(splits, False), rank) is None
        assert "instead of (tensor" in si.check(right, inputs, si.Received(splits, True), rank)
        assert "received splits" in si.check((right, received.long()), inputs,
                                             si.Received(splits, True), rank)
        if right.numel():
            wrong = right.clone()
            wrong.reshape(-1)[-1] += 1
            assert si.check(wrong, inputs, si.Received(splits, False), rank) is not None
        reversed_order = torch.cat(parts[::-1])
        if not torch.equal(reversed_order, right):
            assert si.check(reversed_order, inputs, si.Received(splits, False), rank) is not None


def test_drawn_splits_add_up_to_the_rows_and_include_zeros():
    rng = np.random.default_rng(4)
    drawn = [soak_ops.draw_splits(rng, rows, 4) for rows in range(0, 4000, 7)]
    assert all(sum(sent) == rows for sent, rows in zip(drawn, range(0, 4000, 7)))
    assert all(n >= 0 for sent in drawn for n in sent)
    assert sum(0 in sent for sent in drawn[50:]) > 50  # zeros with many rows too
