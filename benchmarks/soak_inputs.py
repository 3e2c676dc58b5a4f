"""Inputs of the soak's ops and their numpy reference, independent of flock's code paths.

Every rank draws the same op sequence from one seeded generator, so every rank knows
every other rank's input. Rank r's input, flattened, is a function of one random
``base`` vector shared by the ranks and two per-rank integers a_r and c_r:

    signed  (int8..int64, floats)   a_r·base + c_r, a_r = ±1, base and c_r in [-10, 10]
    uint8                            base + c_r, both in [0, 20)
    product (allreduce "product")    1 + (base XOR c_r) & 1: 1 or 2
    bool                             (base XOR c_r) & 1

Floating dtypes take the signed values times 1/8. Every value, and every sum of up to
six of them, is exact in every dtype (int8 and bfloat16 included), so sums, minima,
maxima, products, copies and concatenations are checked for equality; weighted
combinations (averages, neighbor ops) are checked to WEIGHTED_RTOL of Σ|w|·|x|, the
size of what was summed.

A reference is one of five forms, computed CHUNK elements at a time so that checking a
4 MB tensor at np 6 needs a few MB, not size × 8 bytes per element:

    Reduce(op)         the elementwise reduction over every rank ("sum", "min", "max",
                       "product"; bool: sum/max = or, min/product = and)
    Concat(ranks)      the ranks' flattened inputs one after the other
    Mix({rank: w})     Σ w_j·x_j (float64)
    MyRows(whole)      this rank's rows (dim 0) of a Reduce or Mix of inputs of one shape,
                       split as reducescatter splits them (even_rows); checked like whole
    Received(splits)   the rows each rank r sends this rank, in rank order: rows
                       [Σ splits[r][:rank], + splits[r][rank]) of rank r's input; with
                       returned, the result is (tensor, int32 splits received), checked too

MyRows and Received also check the result's shape; the others its element count.
"""

from dataclasses import dataclass
from typing import Dict, List, Sequence

import numpy as np
import torch

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
ALL_DTYPES = ["bool"] + INT_DTYPES + FLOAT_DTYPES
ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
            "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
# Allowed error of a weighted sum, relative to Σ|w_j|·|x_j| (as in
# tests/python/parallel/neighbor_reference.py, whose half-type bounds are looser): half
# types accumulate in float32 and round at most a few times (the hierarchical op: local
# mean, neighbor mix, broadcast), 2^-11 (float16) or 2^-8 (bfloat16) relative each.
WEIGHTED_RTOL = {"float16": 5e-3, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12}
CHUNK = 1 << 18


@dataclass
class Reduce:
    op: str


@dataclass
class Concat:
    ranks: Sequence[int]


@dataclass
class Mix:
    weights: Dict[int, float]


@dataclass
class MyRows:
    whole: object  # Reduce or Mix


@dataclass
class Received:
    splits: List[List[int]]  # splits[r][k]: the rows rank r sends rank k
    returned: bool  # the op returns (tensor, the splits received), not the tensor


def even_rows(rows, size):
    """Rows of dim 0 per rank: as even as possible, the first rows % size one more."""
    return [rows // size + (1 if r < rows % size else 0) for r in range(size)]


class Inputs:
    """Every rank's input of one op: rank r has counts[r] elements shaped shapes[r]."""

    def __init__(self, rng, dtype, shapes, values="signed"):
        self.dtype = dtype
        self.shapes = [tuple(s) for s in shapes]
        self.counts = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        size, longest = len(self.shapes), max(self.counts, default=0)
        if dtype == "bool":
            values = "bool"
        elif dtype == "uint8" and values == "signed":
            values = "uint8"
        self.values = values
        if values == "signed":
            self.base = rng.integers(-10, 11, longest, dtype=np.int16)
            self.a = rng.choice(np.array([-1, 1], dtype=np.int16), size)
            self.c = rng.integers(-10, 11, size, dtype=np.int16)
        else:
            high = 20 if values == "uint8" else 2
            self.base = rng.integers(0, high, longest, dtype=np.int16)
            self.a = np.ones(size, dtype=np.int16)
            self.c = rng.integers(0, high, size, dtype=np.int16)

    def _ints(self, rank, lo, hi):
        x = self.base[lo:hi]
        if self.values in ("signed", "uint8"):
            return self.a[rank] * x + self.c[rank]
        bit = (x ^ self.c[rank]) & 1
        return bit + 1 if self.values == "product" else bit

    def chunk(self, rank, lo, hi):
        """float64 values of rank's flat input, elements [lo, hi)."""
        x = self._ints(rank, lo, hi).astype(np.float64)
        if self.dtype in FLOAT_DTYPES and self.values == "signed":
            x *= 0.125
        return x

    def tensor(self, rank):
        """Rank's input as a torch tensor of the op's dtype and shape."""
        ints = self._ints(rank, 0, self.counts[rank])
        if self.dtype == "bool":
            flat = torch.from_numpy(ints.astype(np.bool_))
        elif self.dtype in INT_DTYPES:
            flat = torch.from_numpy(ints.astype(self.dtype))
        else:
            scale = 0.125 if self.values == "signed" else 1.0
            wide = "float64" if self.dtype == "float64" else "float32"
            flat = torch.from_numpy(ints.astype(wide) * scale).to(getattr(torch, self.dtype))
        return flat.reshape(self.shapes[rank])


def _reduce(inputs, op, lo, hi):
    parts = [inputs.chunk(r, lo, hi) for r in range(len(inputs.counts))]
    if inputs.dtype == "bool":
        stacked = np.stack(parts).astype(bool)
        any_or_all = stacked.any(axis=0) if op in ("sum", "max") else stacked.all(axis=0)
        return any_or_all.astype(np.float64), None
    combine = {"sum": np.add, "min": np.minimum, "max": np.maximum, "product": np.multiply}[op]
    return combine.reduce(np.stack(parts), axis=0), None


def _segments(inputs, segments, lo, hi):
    """Elements [lo, hi) of the concatenation of segments (rank, first element, count)
    of the ranks' flat inputs."""
    pieces, start = [], 0
    for r, first, count in segments:
        end = start + count
        a, b = max(lo, start), min(hi, end)
        if a < b:
            pieces.append(inputs.chunk(r, first + a - start, first + b - start))
        start = end
    return (np.concatenate(pieces) if pieces else np.zeros(0)), None


def _mix(inputs, weights, lo, hi):
    expected, bound = np.zeros(hi - lo), np.zeros(hi - lo)
    for r, w in weights.items():
        x = inputs.chunk(r, lo, hi)
        expected += w * x
        bound += abs(w) * np.abs(x)
    return expected, bound


def _row_elements(shape):
    return int(np.prod(shape[1:], dtype=np.int64))


def _my_rows(inputs, rank):
    """(first row, rows) of rank's part of a reducescatter of inputs.shapes[rank]."""
    rows = even_rows(inputs.shapes[rank][0], len(inputs.shapes))
    return sum(rows[:rank]), rows[rank]


def _received_segments(inputs, splits, rank):
    """(rank r, first element, elements) of the rows each rank r sends rank."""
    segments = []
    for r, sent in enumerate(splits):
        row = _row_elements(inputs.shapes[r])
        segments.append((r, sum(sent[:rank]) * row, sent[rank] * row))
    return segments


def expected_shape(inputs, reference, rank):
    """The result's shape for MyRows and Received; None: only its element count."""
    shape = inputs.shapes[rank]
    if isinstance(reference, MyRows):
        return (_my_rows(inputs, rank)[1],) + shape[1:]
    if isinstance(reference, Received):
        return (sum(sent[rank] for sent in reference.splits),) + shape[1:]
    return None


def expected_count(inputs, reference, rank):
    if isinstance(reference, Concat):
        return sum(inputs.counts[r] for r in reference.ranks)
    shape = expected_shape(inputs, reference, rank)
    return inputs.counts[rank] if shape is None else int(np.prod(shape, dtype=np.int64))


def _expected(inputs, reference, rank, lo, hi):
    """(expected float64 values, error bound or None: exact) of elements [lo, hi)."""
    if isinstance(reference, MyRows):
        offset = _my_rows(inputs, rank)[0] * _row_elements(inputs.shapes[rank])
        return _expected(inputs, reference.whole, rank, offset + lo, offset + hi)
    if isinstance(reference, Reduce):
        return _reduce(inputs, reference.op, lo, hi)
    if isinstance(reference, Concat):
        segments = [(r, 0, inputs.counts[r]) for r in reference.ranks]
        return _segments(inputs, segments, lo, hi)
    if isinstance(reference, Received):
        return _segments(inputs, _received_segments(inputs, reference.splits, rank), lo, hi)
    return _mix(inputs, reference.weights, lo, hi)


def _unpack(got, reference, rank):
    """(the result's tensor, None) or (None, what is wrong with its form)."""
    if isinstance(reference, Received) and reference.returned:
        if not isinstance(got, tuple) or len(got) != 2:
            return None, "a {} instead of (tensor, received splits)".format(type(got).__name__)
        got, received = got
        expected = [sent[rank] for sent in reference.splits]
        if not isinstance(received, torch.Tensor) or received.dtype != torch.int32 or \
                received.tolist() != expected:
            return None, "received splits {!r} instead of {} (torch.int32)".format(
                received, expected)
    if not isinstance(got, torch.Tensor):
        return None, "a {} instead of a tensor".format(type(got).__name__)
    return got, None


def _first_wrong(inputs, reference, rank, flat):
    """What is wrong with the values of flat, the result flattened; None: nothing."""
    for lo in range(0, flat.numel(), CHUNK):
        hi = min(flat.numel(), lo + CHUNK)
        expected, bound = _expected(inputs, reference, rank, lo, hi)
        values = flat[lo:hi].to(torch.float64).numpy()
        if expected.shape != values.shape:  # the reference read past an input's end
            return "the reference has {} of elements [{}, {})".format(len(expected), lo, hi)
        if bound is None:
            bad = values != expected
        else:
            allowed = WEIGHTED_RTOL[inputs.dtype] * np.maximum(bound, 1e-3)
            bad = ~(np.abs(values - expected) <= allowed)  # NaN counts as bad
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            return "{} of elements [{}, {}) wrong; first at {}: got {!r}, expected {!r}".format(
                int(bad.sum()), lo, hi, lo + k, values[k], expected[k])
    return None


def check(got, inputs, reference, rank):
    """None when ``got`` (a torch tensor; for Received with returned, (tensor, splits))
    is rank's right result, else what is wrong."""
    got, wrong = _unpack(got, reference, rank)
    if wrong is not None:
        return wrong
    count = expected_count(inputs, reference, rank)
    shape = expected_shape(inputs, reference, rank)
    if got.dtype != getattr(torch, inputs.dtype):
        return "dtype {} instead of {}".format(got.dtype, inputs.dtype)
    if got.numel() != count:
        return "{} elements instead of {} (shape {})".format(got.numel(), count,
                                                              tuple(got.shape))
    if shape is not None and tuple(got.shape) != shape:
        return "shape {} instead of {}".format(tuple(got.shape), shape)
    return _first_wrong(inputs, reference, rank, got.reshape(-1))


def draw_count(rng, dtype, max_bytes):
    """Elements of a tensor of 0 to max_bytes bytes: 0 one time in 20, else log-uniform."""
    most = max_bytes // ITEMSIZE[dtype]
    if most < 1 or rng.random() < 0.05:
        return 0
    return int(min(most, 2 ** rng.uniform(0, np.log2(most + 1))))


def same_shape(rng, count) -> List[int]:
    """A shape of count elements: 0-d now and then for one element, else 1-d or 2-d."""
    if count == 1 and rng.random() < 0.3:
        return []
    if count > 1 and count % 4 == 0 and rng.random() < 0.5:
        return [count // 4, 4]
    return [count]
