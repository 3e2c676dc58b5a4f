"""flock for numpy arrays: the same basics and collectives as flock.torch.

Results are new arrays; functions ending in ``_`` write into the given array
(which must then be a writable ndarray).
"""

from flock import _collectives
from flock.basics import (init, is_homogeneous, is_initialized, local_rank,  # noqa: F401
                          local_size, machine_rank, machine_size, rank, shutdown, size)
from flock.errors import (FlockAbortedError, FlockError, FlockInvalidArgumentError,  # noqa: F401
                          FlockMismatchError, FlockNotInitializedError, FlockTransportError,
                          FlockUnsupportedError)
from flock.numpy import _adapter
from flock.reduce_op import Average, Max, Min, Product, ReduceOp, Sum  # noqa: F401


def allreduce(array, average=None, name=None, is_hierarchical_local=False, op=None):
    """Returns the reduction over all ranks of ``array`` (average by default)."""
    return _collectives.allreduce(_adapter, array, average, name, op, is_hierarchical_local)


def allreduce_(array, average=None, name=None, is_hierarchical_local=False, op=None):
    """Like :func:`allreduce`, writing the result into ``array``."""
    return _collectives.allreduce(_adapter, array, average, name, op, is_hierarchical_local,
                                  inplace=True)


def broadcast(array, root_rank, name=None):
    """Returns a copy of ``root_rank``'s array on every rank."""
    return _collectives.broadcast(_adapter, array, root_rank, name)


def broadcast_(array, root_rank, name=None):
    """Overwrites ``array`` with ``root_rank``'s array."""
    return _collectives.broadcast(_adapter, array, root_rank, name, inplace=True)


def allgather(array, name=None):
    """Concatenates every rank's array along dim 0 (dim 0 may differ between ranks)."""
    return _collectives.allgather(_adapter, array, name)


def barrier():
    """Returns when every rank has called barrier()."""
    _collectives.core.barrier()
