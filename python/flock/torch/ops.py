"""Collectives on torch tensors, with Bluefog's names and arguments.

``op`` (flock's addition) picks sum, average, min, max or product; Bluefog's
``average`` flag still works. Functions ending in ``_`` work in place;
``*_nonblocking`` ones return a handle for ``synchronize`` / ``wait`` / ``poll``.
"""

from flock._ops_api import make_ops
from flock.torch import _adapter

globals().update(make_ops(_adapter))

__all__ = ["allreduce", "allreduce_", "allreduce_nonblocking", "allreduce_nonblocking_",
           "broadcast", "broadcast_", "broadcast_nonblocking", "broadcast_nonblocking_",
           "allgather", "allgather_nonblocking", "barrier", "synchronize", "wait", "poll",
           "neighbor_allreduce", "neighbor_allreduce_", "neighbor_allreduce_nonblocking",
           "neighbor_allreduce_nonblocking_", "neighbor_allgather", "neighbor_allgather_nonblocking",
           "pair_gossip", "pair_gossip_nonblocking", "hierarchical_neighbor_allreduce",
           "hierarchical_neighbor_allreduce_nonblocking"]
