"""How flock's collectives see torch tensors: contiguous, detached, via DLPack.

DLPack 0.6 (torch 1.13) has no bool type, so bool tensors travel as their
uint8 storage with a dtype override the core understands.
"""

import torch
from torch.utils import dlpack as _dlpack

from flock._core_loader import core as _core

# The capsule converters themselves: torch.utils.dlpack.from_dlpack first looks for
# __dlpack__ on its argument, a few microseconds per call that a capsule never needs.
_to_capsule = _dlpack.to_dlpack
_from_capsule = getattr(torch._C, "_from_dlpack", _dlpack.from_dlpack)


def _check(tensor):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("expected a torch.Tensor, got {}".format(type(tensor).__name__))


def cuda_stream(tensor):
    """The current CUDA stream of the tensor's device as an int, or None for a CPU tensor."""
    if not tensor.is_cuda:
        return None
    return torch.cuda.current_stream(tensor.device).cuda_stream


def contiguous(tensor):
    _check(tensor)
    if not tensor.requires_grad and tensor.is_contiguous():
        return tensor  # what detach().contiguous() would view, without two new tensor objects
    return tensor.detach().contiguous()


def export(tensor):
    """A DLPack capsule of the tensor and the dtype override it needs."""
    if tensor.dtype == torch.bool:
        return _to_capsule(tensor.view(torch.uint8)), "bool"
    return _to_capsule(tensor), None


# From this size on, outputs come from flock's pool of reused memory: a fresh large
# allocation page-faults on every first write (milliseconds per MiB on a VM).
POOLED_OUTPUT_BYTES = 64 << 10


_POOLED_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
                  torch.float64: "float64", torch.uint8: "uint8", torch.int8: "int8",
                  torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
                  torch.bool: "uint8"}


def empty_like(tensor):
    dtype = _POOLED_DTYPES.get(tensor.dtype)
    if (dtype is None or not tensor.is_cpu or
            tensor.numel() * tensor.element_size() < POOLED_OUTPUT_BYTES):
        return torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return import_capsule(_core.pooled_empty(list(tensor.shape), dtype), like=tensor)


def empty(shape, like):
    return torch.empty(tuple(shape), dtype=like.dtype, device=like.device)


def copy(tensor):
    return tensor.detach().clone(memory_format=torch.contiguous_format)


def copy_into(destination, source):
    with torch.no_grad():
        destination.copy_(source)


def same_memory(a, b):
    """True when ``a`` is ``b`` or a detached alias of it (same storage, same layout)."""
    return a.data_ptr() == b.data_ptr() and a.stride() == b.stride() and a.shape == b.shape


def import_capsule(capsule, like):
    """The engine's output tensor (zero copy), with ``like``'s dtype."""
    tensor = _from_capsule(capsule)
    return tensor.view(torch.bool) if like.dtype == torch.bool else tensor


def splits(values, like):
    """An alltoall's received splits, as Horovod returns them (an int32 CPU tensor)."""
    del like
    return torch.tensor(values, dtype=torch.int32)


_WIRE_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def narrowed(tensor, wire):
    """A copy of ``tensor`` in the dtype named ``wire``, or None when it would not be
    smaller (not floating point, or at most 16 bits wide already)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point() or \
            tensor.element_size() <= 2:
        return None  # the op sends it as it is (or reports what it is on every rank)
    with torch.no_grad():
        return tensor.detach().to(_WIRE_DTYPES[wire], memory_format=torch.contiguous_format)


def widened(result, like):
    """``result`` (a narrowed op's output) in ``like``'s dtype."""
    return result.to(like.dtype)
