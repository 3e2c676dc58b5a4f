"""Collectives on torch tensors, with Bluefog's names and arguments.

``op`` (flock's addition) picks sum, average, min, max or product; Bluefog's
``average`` flag still works. Every op also takes ``compression=`` (keyword only:
``flock.Compression.fp16`` / ``.bf16`` send floating-point tensors in half precision,
flock/compression.py). Functions ending in ``_`` work in place;
``*_nonblocking`` ones return a handle for ``synchronize`` / ``wait`` / ``poll``.

flock.numpy's ops (numpy/_ops.py) are generated from this file by
tools/gen_numpy_ops.py: edit here, then run it.
"""

from flock import _collectives as _c
from flock import _neighbor as _n
from flock._public import public as _public
from flock.torch import _adapter

__all__ = ["allreduce", "allreduce_", "allreduce_nonblocking", "allreduce_nonblocking_",
           "broadcast", "broadcast_", "broadcast_nonblocking", "broadcast_nonblocking_",
           "allgather", "allgather_nonblocking", "reducescatter", "reducescatter_nonblocking",
           "alltoall", "alltoall_nonblocking", "barrier", "synchronize", "wait", "poll",
           "neighbor_allreduce", "neighbor_allreduce_", "neighbor_allreduce_nonblocking",
           "neighbor_allreduce_nonblocking_", "neighbor_allgather", "neighbor_allgather_nonblocking",
           "pair_gossip", "pair_gossip_nonblocking", "hierarchical_neighbor_allreduce",
           "hierarchical_neighbor_allreduce_nonblocking"]

barrier = _public(_c.barrier)
synchronize = _public(_c.synchronize)
wait = _public(_c.synchronize)
poll = _public(_c.poll)


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def allreduce_nonblocking(tensor, average=None, is_hierarchical_local=False, name=None, *,
                          op=None):
    """Starts an allreduce (average by default) and returns its handle."""
    return _c.allreduce_nonblocking(_adapter, tensor, average, name, op, is_hierarchical_local)


@_public
@_c.compressible(_adapter, inplace=True, blocking=False)
def allreduce_nonblocking_(tensor, average=None, is_hierarchical_local=False, name=None, *,
                           op=None):
    """Starts an in-place allreduce and returns its handle."""
    return _c.allreduce_nonblocking(_adapter, tensor, average, name, op, is_hierarchical_local,
                                    inplace=True)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def allreduce(tensor, average=None, is_hierarchical_local=False, name=None, *, op=None):
    """The reduction over all ranks (average by default; ``op`` picks sum/min/max/product).

    ``is_hierarchical_local=True`` reduces over the ranks of this machine only.
    """
    return _c.synchronize(_c.allreduce_nonblocking(_adapter, tensor, average, name, op,
                                                   is_hierarchical_local, wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=True, blocking=True)
def allreduce_(tensor, average=None, is_hierarchical_local=False, name=None, *, op=None):
    """Like allreduce, writing the result into ``tensor`` (returned)."""
    return _c.synchronize(_c.allreduce_nonblocking(_adapter, tensor, average, name, op,
                                                   is_hierarchical_local, inplace=True,
                                                   wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def broadcast_nonblocking(tensor, root_rank, name=None):
    return _c.broadcast_nonblocking(_adapter, tensor, root_rank, name)


@_public
@_c.compressible(_adapter, inplace=True, blocking=False)
def broadcast_nonblocking_(tensor, root_rank, name=None):
    return _c.broadcast_nonblocking(_adapter, tensor, root_rank, name, inplace=True)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def broadcast(tensor, root_rank, name=None):
    """A copy of ``root_rank``'s tensor on every rank."""
    return _c.synchronize(_c.broadcast_nonblocking(_adapter, tensor, root_rank, name,
                                                   wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=True, blocking=True)
def broadcast_(tensor, root_rank, name=None):
    """Overwrites ``tensor`` with ``root_rank``'s tensor (returned)."""
    return _c.synchronize(_c.broadcast_nonblocking(_adapter, tensor, root_rank, name,
                                                   inplace=True, wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def allgather_nonblocking(tensor, name=None):
    return _c.allgather_nonblocking(_adapter, tensor, name)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def allgather(tensor, name=None):
    """Every rank's tensor concatenated along dim 0 (dim 0 may differ between ranks)."""
    return _c.synchronize(_c.allgather_nonblocking(_adapter, tensor, name, wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def reducescatter_nonblocking(tensor, average=None, name=None, *, op=None):
    """Starts a reducescatter (see reducescatter) and returns its handle."""
    return _c.reducescatter_nonblocking(_adapter, tensor, average, name, op)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def reducescatter(tensor, average=None, name=None, *, op=None):
    """This rank's rows of the reduction over all ranks (average by default; ``op``
    picks sum/min/max/product).

    Every rank passes the same shape; dim 0 of the result is split between the ranks
    as evenly as possible, the first ``shape[0] % size()`` ranks getting one row more
    (Horovod's split). Reducescatters of one dtype and reduction are fused.
    """
    return _c.synchronize(_c.reducescatter_nonblocking(_adapter, tensor, average, name, op,
                                                       wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def alltoall_nonblocking(tensor, splits=None, name=None):
    """Starts an alltoall (see alltoall) and returns its handle."""
    return _c.alltoall_nonblocking(_adapter, tensor, splits, name)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def alltoall(tensor, splits=None, name=None):
    """Sends rank ``r`` the next ``splits[r]`` rows of ``tensor`` (dim 0) and returns the
    rows received, concatenated in rank order.

    ``splits`` None splits dim 0 evenly (it must divide by ``size()``) and returns the
    tensor; with ``splits`` it returns ``(tensor, received_splits)``, the rows that came
    from each rank (Horovod's convention). Dim 0 may differ between ranks, the other
    dims may not.
    """
    return _c.synchronize(_c.alltoall_nonblocking(_adapter, tensor, splits, name,
                                                  wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def neighbor_allreduce_nonblocking(tensor, self_weight=None, src_weights=None, dst_weights=None,
                                   enable_topo_check=True, name=None):
    """Starts a neighbor_allreduce (see neighbor_allreduce) and returns its handle."""
    return _n.neighbor_allreduce_nonblocking(_adapter, tensor, self_weight, src_weights,
                                             dst_weights, enable_topo_check, name)


@_public
@_c.compressible(_adapter, inplace=True, blocking=False)
def neighbor_allreduce_nonblocking_(tensor, self_weight=None, src_weights=None, dst_weights=None,
                                    enable_topo_check=True, name=None):
    """Starts an in-place neighbor_allreduce and returns its handle."""
    return _n.neighbor_allreduce_nonblocking(_adapter, tensor, self_weight, src_weights,
                                             dst_weights, enable_topo_check, name, inplace=True)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def neighbor_allreduce(tensor, self_weight=None, src_weights=None, dst_weights=None,
                       enable_topo_check=True, name=None):
    """Weighted average with the neighbours: self_weight·t + Σ src_weights[j]·t_j.

    Without weights: the static topology's (weighted, or uniform 1/(indegree+1)).
    ``dst_weights`` (list of ranks, or {rank: weight}) makes this call's topology
    dynamic; ``self_weight`` and ``src_weights`` then say what this rank receives.
    Only the ranks this call sends to or receives from are involved.
    """
    return _c.synchronize(_n.neighbor_allreduce_nonblocking(
        _adapter, tensor, self_weight, src_weights, dst_weights, enable_topo_check, name,
        wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=True, blocking=True)
def neighbor_allreduce_(tensor, self_weight=None, src_weights=None, dst_weights=None,
                        enable_topo_check=True, name=None):
    """Like neighbor_allreduce, writing the result into ``tensor`` (returned)."""
    return _c.synchronize(_n.neighbor_allreduce_nonblocking(
        _adapter, tensor, self_weight, src_weights, dst_weights, enable_topo_check, name,
        inplace=True, wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def neighbor_allgather_nonblocking(tensor, src_ranks=None, dst_ranks=None, *,
                                   enable_topo_check=True, name=None):
    return _n.neighbor_allgather_nonblocking(_adapter, tensor, src_ranks, dst_ranks,
                                             enable_topo_check, name)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def neighbor_allgather(tensor, src_ranks=None, dst_ranks=None, *, enable_topo_check=True,
                       name=None):
    """The in-neighbours' tensors concatenated on dim 0 (in_neighbor_ranks() order, or
    ``src_ranks`` order when ``src_ranks`` and ``dst_ranks`` give this call's peers).

    ``enable_topo_check`` (dynamic calls): receivers confirm to their senders, so a
    rank sending to one that does not expect it fails on both (as neighbor_allreduce).
    """
    return _c.synchronize(_n.neighbor_allgather_nonblocking(
        _adapter, tensor, src_ranks, dst_ranks, enable_topo_check, name, wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def pair_gossip_nonblocking(tensor, target_rank, self_weight=0.5, pair_weight=0.5, name=None):
    return _n.pair_gossip_nonblocking(_adapter, tensor, target_rank, self_weight, pair_weight,
                                      name)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def pair_gossip(tensor, target_rank, self_weight=0.5, pair_weight=0.5, name=None):
    """self_weight·t + pair_weight·(target_rank's t); target_rank pairs with this rank."""
    return _c.synchronize(_n.pair_gossip_nonblocking(_adapter, tensor, target_rank, self_weight,
                                                     pair_weight, name, wait_follows=True))


@_public
@_c.compressible(_adapter, inplace=False, blocking=False)
def hierarchical_neighbor_allreduce_nonblocking(tensor, self_weight=None,
                                                src_machine_weights=None,
                                                dst_machine_weights=None,
                                                enable_topo_check=False, name=None):
    return _n.hierarchical_neighbor_allreduce_nonblocking(
        _adapter, tensor, self_weight, src_machine_weights, dst_machine_weights,
        enable_topo_check, name)


@_public
@_c.compressible(_adapter, inplace=False, blocking=True)
def hierarchical_neighbor_allreduce(tensor, self_weight=None, src_machine_weights=None,
                                    dst_machine_weights=None, enable_topo_check=False,
                                    name=None):
    """The machine-level neighbor average of the machine means.

    Each machine's mean (over its local ranks) is averaged with the neighbour
    machines' means: by the machine topology's weights (set_machine_topology), or by
    ``self_weight`` and ``src_machine_weights`` ({machine: weight}), with
    ``dst_machine_weights`` for a dynamic machine topology. Every rank of a machine
    passes the same values and gets the same result.
    """
    return _c.synchronize(_n.hierarchical_neighbor_allreduce_nonblocking(
        _adapter, tensor, self_weight, src_machine_weights, dst_machine_weights,
        enable_topo_check, name, wait_follows=True))
