"""Collectives on torch tensors, with Bluefog's names and arguments.

``op`` (flock's addition) picks sum, average, min, max or product; Bluefog's
``average`` flag still works. Functions ending in ``_`` work in place.
"""

from flock import _collectives
from flock.torch import _adapter


def allreduce(tensor, average=None, name=None, is_hierarchical_local=False, op=None):
    """Returns the reduction over all ranks of ``tensor`` (average by default).

    ``is_hierarchical_local=True`` reduces over the ranks of this machine only.
    """
    return _collectives.allreduce(_adapter, tensor, average, name, op, is_hierarchical_local)


def allreduce_(tensor, average=None, name=None, is_hierarchical_local=False, op=None):
    """Like :func:`allreduce`, writing the result into ``tensor``."""
    return _collectives.allreduce(_adapter, tensor, average, name, op, is_hierarchical_local,
                                  inplace=True)


def broadcast(tensor, root_rank, name=None):
    """Returns a copy of ``root_rank``'s tensor on every rank."""
    return _collectives.broadcast(_adapter, tensor, root_rank, name)


def broadcast_(tensor, root_rank, name=None):
    """Overwrites ``tensor`` with ``root_rank``'s tensor."""
    return _collectives.broadcast(_adapter, tensor, root_rank, name, inplace=True)


def allgather(tensor, name=None):
    """Concatenates every rank's tensor along dim 0 (dim 0 may differ between ranks)."""
    return _collectives.allgather(_adapter, tensor, name)


def barrier():
    """Returns when every rank has called barrier()."""
    from flock._core_loader import core
    core.barrier()
