"""The global collectives written once for any array library.

A framework module (flock.torch, flock.numpy) supplies an *adapter* that knows
how to make contiguous copies, allocate outputs and export/import DLPack; these
functions do the rest. Every op is asynchronous underneath: the ``*_nonblocking``
functions return an integer handle, ``synchronize(handle)`` waits for it and
returns the result, and the blocking functions are the two in a row (submitted with
``wait_follows=True``: the engine is not woken for a request its caller waits for at
once, since the wait itself drives the engine or wakes it).

When this rank cannot even hand its input over (wrong type, unsupported
layout), it still submits the request with the reason attached, so the op
fails on every rank instead of leaving the others waiting.
"""

import functools
import inspect
import operator

from flock._args import as_rank
from flock._core_loader import core
from flock.compression import resolve as resolve_compression
from flock.errors import FlockInvalidArgumentError
from flock.reduce_op import resolve_reduce_op

# handle -> function that turns the finished op into the caller's result. It
# also holds the Python objects involved until the handle is synchronized.
_finishers = {}
# handle -> function giving the CUDA streams that must wait for the op (CUDA tensors
# only): the caller's current stream and the one it submitted on.
_streams = {}


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


def _register(handle, finisher, stream_of=None):
    _finishers[handle] = finisher
    if stream_of is not None:
        _streams[handle] = stream_of
    return handle


def _cuda_stream(adapter, tensor):
    """The caller's current CUDA stream for ``tensor`` (an int), or None off the GPU."""
    current = getattr(adapter, "cuda_stream", None)
    return current(tensor) if current is not None else None


def _stream_of(adapter, tensor, stream):
    """For _register: the streams synchronize makes wait — the current one then, and
    ``stream``, the one the op was submitted on (its temporaries may be freed there) —
    or None off the GPU."""
    if stream is None:
        return None
    return lambda: sorted({_cuda_stream(adapter, tensor), stream})


def synchronize(handle, block=False):
    """Waits for the op of ``handle`` and returns its result (raises its error).

    For CUDA tensors the op has finished once its work is queued on flock's
    stream: the caller's current stream is made to wait for it and this returns
    at once; ``block=True`` also waits on the host until the GPU is done.
    """
    stream_of = _streams.get(handle)
    try:
        gathered = core.wait(handle, stream_of() if stream_of is not None else [], block)
    except KeyboardInterrupt:
        raise  # the op is still running: synchronize(handle) may be called again
    except BaseException:
        _finishers.pop(handle, None)
        _streams.pop(handle, None)
        raise
    _streams.pop(handle, None)
    finisher = _finishers.pop(handle, None)
    return finisher(gathered) if finisher is not None else None


def poll(handle):
    """True when the op of ``handle`` has finished; synchronize() then returns at once."""
    return core.poll(handle)


def _reduce_op_or_error(src, average, op):
    """The ReduceOp the arguments select; a bad choice becomes ``src``'s error, so the
    op is still submitted and fails on every rank instead of leaving the others waiting."""
    try:
        return resolve_reduce_op(average, op)
    except FlockInvalidArgumentError as error:
        if src.error is None:
            src.error = str(error)
        return resolve_reduce_op(None, None)


def allreduce_nonblocking(adapter, tensor, average=None, name=None, op=None,
                          is_hierarchical_local=False, inplace=False, wait_follows=False):
    src = _Exported(adapter, tensor)
    reduce_op = _reduce_op_or_error(src, average, op)
    if src.error is not None:
        handle = core.enqueue_allreduce(None, None, reduce_op, name, is_hierarchical_local,
                                        local_error=src.error, wait_follows=wait_follows)
        return _register(handle, lambda _: None)
    # In place on a contiguous tensor writes straight into it; otherwise into a new buffer.
    out = src.tensor if inplace else adapter.empty_like(src.tensor)
    out_capsule = None if out is src.tensor else adapter.export(out)[0]  # None: in place
    stream = _cuda_stream(adapter, src.tensor)
    handle = core.enqueue_allreduce(src.capsule, out_capsule, reduce_op, name,
                                    is_hierarchical_local, src.override, wait_follows=wait_follows,
                                    stream=stream or 0)
    return _register(handle, lambda _: _deliver(adapter, tensor, out, inplace),
                     _stream_of(adapter, src.tensor, stream))


def broadcast_nonblocking(adapter, tensor, root_rank, name=None, inplace=False,
                          wait_follows=False):
    src = _Exported(adapter, tensor)
    try:
        root_rank = as_rank("root_rank", root_rank)
    except TypeError as error:
        src.error, root_rank = str(error), 0  # still submitted: the other ranks must not wait
    if src.error is not None:
        handle = core.enqueue_broadcast(None, root_rank, name, local_error=src.error,
                                        wait_follows=wait_follows)
        return _register(handle, lambda _: None)
    work = src.tensor
    if not inplace and adapter.same_memory(work, tensor):
        work = adapter.copy(tensor)  # never modify the caller's tensor
        src.capsule, src.override = adapter.export(work)
    stream = _cuda_stream(adapter, work)
    handle = core.enqueue_broadcast(src.capsule, root_rank, name, src.override,
                                    wait_follows=wait_follows, stream=stream or 0)
    return _register(handle, lambda _: _deliver(adapter, tensor, work, inplace),
                     _stream_of(adapter, work, stream))


def allgather_nonblocking(adapter, tensor, name=None, wait_follows=False):
    src = _Exported(adapter, tensor)
    if src.error is not None:
        handle = core.enqueue_allgather(None, name, local_error=src.error,
                                        wait_follows=wait_follows)
        return _register(handle, lambda _: None)
    stream = _cuda_stream(adapter, src.tensor)
    handle = core.enqueue_allgather(src.capsule, name, src.override, wait_follows=wait_follows,
                                    stream=stream or 0)
    return _register(handle, lambda capsule: adapter.import_capsule(capsule, like=src.tensor),
                     _stream_of(adapter, src.tensor, stream))


def reducescatter_nonblocking(adapter, tensor, average=None, name=None, op=None,
                              wait_follows=False):
    src = _Exported(adapter, tensor)
    reduce_op = _reduce_op_or_error(src, average, op)
    if src.error is not None:
        handle = core.enqueue_reducescatter(None, None, reduce_op, name, local_error=src.error,
                                            wait_follows=wait_follows)
        return _register(handle, lambda _: None)
    out = adapter.empty(core.reducescatter_shape(list(src.tensor.shape)), like=src.tensor)
    stream = _cuda_stream(adapter, src.tensor)
    handle = core.enqueue_reducescatter(src.capsule, adapter.export(out)[0], reduce_op, name,
                                        src.override, wait_follows=wait_follows,
                                        stream=stream or 0)
    return _register(handle, lambda _: out, _stream_of(adapter, src.tensor, stream))


_INT64 = (-2 ** 63, 2 ** 63 - 1)


def _as_splits(splits):
    """``splits`` as a list of ints (None stays None: an even split): any sequence of
    integers — Python or numpy integers, 0-d integer tensors — or a 1-d integer tensor."""
    if splits is None:
        return None
    tolist = getattr(splits, "tolist", None)
    values = tolist() if tolist is not None else list(splits)
    if not isinstance(values, list):
        values = [values]
    try:
        if any(isinstance(v, (bool, float)) for v in values):
            raise TypeError
        ints = [operator.index(v) for v in values]
    except TypeError:
        raise TypeError("splits must be integers, got {!r}".format(splits)) from None
    if any(not _INT64[0] <= v <= _INT64[1] for v in ints):
        raise ValueError("splits {!r} holds a count outside int64".format(ints))
    return ints


def alltoall_nonblocking(adapter, tensor, splits=None, name=None, wait_follows=False):
    src = _Exported(adapter, tensor)
    try:
        split_list = _as_splits(splits)
    except (TypeError, ValueError) as error:
        src.error, split_list = str(error), None  # still submitted: the others must not wait
    if src.error is not None:
        handle = core.enqueue_alltoall(None, None, name, local_error=src.error,
                                       wait_follows=wait_follows)
        return _register(handle, lambda _: None)
    stream = _cuda_stream(adapter, src.tensor)
    handle = core.enqueue_alltoall(src.capsule, split_list, name, src.override,
                                   wait_follows=wait_follows, stream=stream or 0)

    def finish(result):
        capsule, received = result
        output = adapter.import_capsule(capsule, like=src.tensor)
        # Horovod's convention: the received splits come back when splits were given.
        return output if splits is None else (output, adapter.splits(received, like=src.tensor))

    return _register(handle, finish, _stream_of(adapter, src.tensor, stream))


def barrier():
    synchronize(core.enqueue_barrier(wait_follows=True))


def compressible(adapter, inplace, blocking):
    """Gives an op of a framework module the keyword ``compression=``: a floating-point
    tensor is sent as a narrowed copy (flock/compression.py) and the result comes back
    in the tensor's dtype — written into the tensor by the in-place forms."""

    def wrap(op):
        @functools.wraps(op)
        def call(tensor, *args, compression=None, **kwargs):
            wire = resolve_compression(compression).wire if compression is not None else None
            narrow = adapter.narrowed(tensor, wire) if wire is not None else None
            if narrow is None:
                return op(tensor, *args, **kwargs)
            if blocking:
                return _widened(adapter, op(narrow, *args, **kwargs), tensor, inplace)
            handle = op(narrow, *args, **kwargs)
            finish = _finishers.get(handle, lambda _: None)
            _finishers[handle] = lambda gathered: _widened(adapter, finish(gathered), tensor,
                                                           inplace)
            return handle

        signature = inspect.signature(op)
        keyword = inspect.Parameter("compression", inspect.Parameter.KEYWORD_ONLY, default=None)
        call.__signature__ = signature.replace(
            parameters=list(signature.parameters.values()) + [keyword])
        return call

    return wrap


def _widened(adapter, result, tensor, inplace):
    """A compressed op's result in ``tensor``'s dtype (written into it when in place)."""
    if result is None:
        return None
    if isinstance(result, tuple):  # alltoall's (output, received splits)
        return (_widened(adapter, result[0], tensor, inplace),) + result[1:]
    value = adapter.widened(result, tensor)
    if not inplace:
        return value
    adapter.copy_into(tensor, value)
    return tensor


def _deliver(adapter, tensor, result, inplace):
    """The caller's view of a finished op: the new tensor, or ``tensor`` updated."""
    if not inplace:
        return result
    if not adapter.same_memory(result, tensor):
        adapter.copy_into(tensor, result)  # the input was not contiguous: copy the result back
    return tensor

