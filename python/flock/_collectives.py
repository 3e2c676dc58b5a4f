"""The global collectives written once for any array library.

A framework module (flock.torch, flock.numpy) supplies an *adapter* that knows
how to make contiguous copies, allocate outputs and export DLPack capsules;
these functions do the rest. When this rank cannot even hand its input over
(wrong type, unsupported layout), it still tells the core, which cancels the
op on every rank instead of leaving the others waiting.
"""

from flock._core_loader import core
from flock.reduce_op import resolve_reduce_op


class _Exported:
    """A contiguous tensor with its DLPack capsule, or the reason there is none."""

    def __init__(self, adapter, tensor):
        self.tensor = None
        self.capsule = None
        self.override = None
        self.error = None
        try:
            self.tensor = adapter.contiguous(tensor)
            self.capsule, self.override = adapter.export(self.tensor)
        except (TypeError, ValueError, RuntimeError, BufferError, AttributeError) as error:
            self.error = "cannot use {!r} as a tensor: {}".format(type(tensor).__name__, error)


def _export_output(adapter, tensor):
    capsule, _ = adapter.export(tensor)
    return capsule


def allreduce(adapter, tensor, average=None, name=None, op=None, is_hierarchical_local=False,
              inplace=False):
    reduce_op = resolve_reduce_op(average, op)
    src = _Exported(adapter, tensor)
    if src.error is not None:
        core.allreduce(None, None, reduce_op, name, is_hierarchical_local, local_error=src.error)
    # In place on a contiguous tensor writes straight into it; otherwise into a new buffer.
    out = src.tensor if inplace else adapter.empty_like(src.tensor)
    out_capsule = None if out is src.tensor else _export_output(adapter, out)  # None: in place
    core.allreduce(src.capsule, out_capsule, reduce_op, name, is_hierarchical_local, src.override)
    if not inplace:
        return out
    if not adapter.same_memory(out, tensor):
        adapter.copy_into(tensor, out)  # the input was not contiguous: copy the result back
    return tensor


def broadcast(adapter, tensor, root_rank, name=None, inplace=False):
    if not isinstance(root_rank, int) or isinstance(root_rank, bool):
        root_rank = _as_rank(root_rank)
    src = _Exported(adapter, tensor)
    if src.error is not None:
        core.broadcast(None, root_rank, name, local_error=src.error)
    work = src.tensor
    if not inplace and adapter.same_memory(work, tensor):
        work = adapter.copy(tensor)  # never modify the caller's tensor
        src.capsule, src.override = adapter.export(work)
    core.broadcast(src.capsule, root_rank, name, src.override)
    if not inplace:
        return work
    if not adapter.same_memory(work, tensor):
        adapter.copy_into(tensor, work)
    return tensor


def allgather(adapter, tensor, name=None):
    src = _Exported(adapter, tensor)
    if src.error is not None:
        core.allgather(None, lambda shape: None, name, local_error=src.error)
    result = []

    def allocate(shape):
        result.append(adapter.empty(shape, like=src.tensor))
        return _export_output(adapter, result[0])

    core.allgather(src.capsule, allocate, name, src.override)
    return result[0]


def _as_rank(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError("root_rank must be an int, got {!r}".format(value)) from None
