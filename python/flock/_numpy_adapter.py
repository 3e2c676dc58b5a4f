"""How flock's collectives see numpy arrays: C-contiguous, via DLPack.

numpy cannot export bool or read-only arrays through DLPack: bool arrays
travel as uint8 with a dtype override, read-only inputs are copied first.
"""

import numpy as np


def contiguous(array):
    if not isinstance(array, (np.ndarray, np.generic)):
        raise TypeError("expected a numpy.ndarray, got {}".format(type(array).__name__))
    array = np.asarray(array)
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = array.copy(order="C")
    return array


def export(array):
    if array.dtype == np.bool_:
        return array.view(np.uint8).__dlpack__(), "bool"
    return array.__dlpack__(), None


def empty_like(array):
    return np.empty_like(array, order="C")


def empty(shape, like):
    return np.empty(tuple(shape), dtype=like.dtype)


def copy(array):
    return np.array(array, order="C", copy=True)


def copy_into(destination, source):
    np.copyto(destination, source)


def same_memory(a, b):
    """True when writing ``a`` writes exactly ``b``."""
    return a is b


class _CapsuleHolder:
    """What np.from_dlpack expects: an object with __dlpack__ / __dlpack_device__."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def import_capsule(capsule, like):
    """The engine's output array (zero copy), with ``like``'s dtype."""
    array = np.from_dlpack(_CapsuleHolder(capsule))
    return array.view(np.bool_) if like.dtype == np.bool_ else array


def splits(values, like):
    """An alltoall's received splits (an int32 array, as flock.torch's)."""
    del like
    return np.array(values, dtype=np.int32)


def narrowed(array, wire):
    """A copy of ``array`` in the dtype named ``wire``, or None when it would not be
    smaller (not floating point, or at most 16 bits wide already)."""
    if wire == "bfloat16":
        raise TypeError("numpy has no bfloat16: use compression=Compression.fp16")
    if not isinstance(array, (np.ndarray, np.generic)) or array.dtype.kind != "f" or \
            array.dtype.itemsize <= 2:
        return None  # the op sends it as it is (or reports what it is on every rank)
    return array.astype(np.float16, order="C")


def widened(result, like):
    """``result`` (a narrowed op's output) in ``like``'s dtype."""
    return result.astype(np.asarray(like).dtype)
