"""Each rank's test input and the numpy reference result of a collective.

Inputs are a pure function of (test seed, rank, dtype, shape), so every rank
can rebuild every other rank's input and compute the expected result alone.
"""

import numpy as np
import torch

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
ALL_DTYPES = ["bool"] + INT_DTYPES + FLOAT_DTYPES
OPS = ["sum", "average", "min", "max", "product"]
SHAPES = [(), (0,), (1,), (7,), (1000, 1000)]  # 0-d, empty, tiny, odd, 10^6 elements


def rank_input(seed, rank, dtype, shape, op="sum"):
    """float64 values exactly representable in `dtype`, safe from overflow for `op`."""
    rng = np.random.default_rng([seed, rank])
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.float64)
    if op == "product":
        return rng.integers(1, 3, size=shape).astype(np.float64)  # 1 or 2: 2^6 fits int8
    if dtype == "uint8":
        return rng.integers(0, 40, size=shape).astype(np.float64)
    if dtype in INT_DTYPES:
        return rng.integers(-20, 20, size=shape).astype(np.float64)
    values = rng.uniform(-4, 4, size=shape)
    return to_torch(values, dtype).to(torch.float64).numpy()  # rounded to the dtype


def to_torch(values, dtype):
    return torch.from_numpy(np.asarray(values, dtype=np.float64)).to(getattr(torch, dtype))


def reduce_reference(inputs, op):
    stacked = np.stack(inputs)
    if op == "sum":
        return stacked.sum(axis=0)
    if op == "average":
        return stacked.mean(axis=0)
    if op == "min":
        return stacked.min(axis=0)
    if op == "max":
        return stacked.max(axis=0)
    return stacked.prod(axis=0)


def bool_reference(inputs, op):
    stacked = np.stack(inputs).astype(bool)
    return stacked.any(axis=0) if op in ("sum", "max") else stacked.all(axis=0)


def tolerance(dtype, size):
    """Allowed absolute error: half types round at each of the size-1 combining steps."""
    if dtype == "float16":
        return 4e-3 * 4 * size
    if dtype == "bfloat16":
        return 3e-2 * 4 * size
    if dtype == "float32":
        return 1e-5 * size
    if dtype == "float64":
        return 1e-12 * size
    return 0.0
