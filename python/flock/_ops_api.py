"""Builds a framework module's op functions from its adapter.

flock.torch and flock.numpy expose the same functions with the same
signatures; only the adapter differs. ``make_ops(adapter)`` returns them as a
dict for the framework module to put in its namespace.
"""

from flock import _collectives as c
from flock import _neighbor as n
from flock._public import public


def make_ops(adapter):
    """Every op of a framework module, by name, each behind the public-API edge."""
    ops = {}
    for build in (_allreduce_ops, _broadcast_and_allgather_ops, _neighbor_allreduce_ops,
                  _other_neighbor_ops):
        ops.update(build(adapter))
    ops.update(barrier=c.barrier, synchronize=c.synchronize, wait=c.synchronize, poll=c.poll)
    return {name: public(fn) for name, fn in ops.items()}


def _by_name(*functions):
    return {fn.__name__: fn for fn in functions}


def _allreduce_ops(adapter):
    """allreduce, allreduce_ and their nonblocking forms (Bluefog's argument order)."""
    def allreduce_nonblocking(tensor, average=None, is_hierarchical_local=False, name=None, *,
                              op=None):
        """Starts an allreduce (average by default) and returns its handle."""
        return c.allreduce_nonblocking(adapter, tensor, average, name, op, is_hierarchical_local)

    def allreduce_nonblocking_(tensor, average=None, is_hierarchical_local=False, name=None, *,
                               op=None):
        """Starts an in-place allreduce and returns its handle."""
        return c.allreduce_nonblocking(adapter, tensor, average, name, op, is_hierarchical_local,
                                       inplace=True)

    def allreduce(tensor, average=None, is_hierarchical_local=False, name=None, *, op=None):
        """The reduction over all ranks (average by default; ``op`` picks sum/min/max/product).

        ``is_hierarchical_local=True`` reduces over the ranks of this machine only.
        """
        return c.synchronize(c.allreduce_nonblocking(adapter, tensor, average, name, op,
                                                     is_hierarchical_local, wait_follows=True))

    def allreduce_(tensor, average=None, is_hierarchical_local=False, name=None, *, op=None):
        """Like allreduce, writing the result into ``tensor`` (returned)."""
        return c.synchronize(c.allreduce_nonblocking(adapter, tensor, average, name, op,
                                                     is_hierarchical_local, inplace=True,
                                                     wait_follows=True))

    return _by_name(allreduce_nonblocking, allreduce_nonblocking_, allreduce, allreduce_)


def _broadcast_and_allgather_ops(adapter):
    """broadcast, broadcast_, allgather and their nonblocking forms."""
    def broadcast_nonblocking(tensor, root_rank, name=None):
        return c.broadcast_nonblocking(adapter, tensor, root_rank, name)

    def broadcast_nonblocking_(tensor, root_rank, name=None):
        return c.broadcast_nonblocking(adapter, tensor, root_rank, name, inplace=True)

    def broadcast(tensor, root_rank, name=None):
        """A copy of ``root_rank``'s tensor on every rank."""
        return c.synchronize(c.broadcast_nonblocking(adapter, tensor, root_rank, name,
                                                     wait_follows=True))

    def broadcast_(tensor, root_rank, name=None):
        """Overwrites ``tensor`` with ``root_rank``'s tensor (returned)."""
        return c.synchronize(c.broadcast_nonblocking(adapter, tensor, root_rank, name,
                                                     inplace=True, wait_follows=True))

    def allgather_nonblocking(tensor, name=None):
        return c.allgather_nonblocking(adapter, tensor, name)

    def allgather(tensor, name=None):
        """Every rank's tensor concatenated along dim 0 (dim 0 may differ between ranks)."""
        return c.synchronize(c.allgather_nonblocking(adapter, tensor, name, wait_follows=True))

    return _by_name(broadcast_nonblocking, broadcast_nonblocking_, broadcast, broadcast_,
                    allgather_nonblocking, allgather)


def _neighbor_allreduce_ops(adapter):
    """neighbor_allreduce, neighbor_allreduce_ and their nonblocking forms."""
    def neighbor_allreduce_nonblocking(tensor, self_weight=None, src_weights=None,
                                       dst_weights=None, enable_topo_check=True, name=None):
        """Starts a neighbor_allreduce (see neighbor_allreduce) and returns its handle."""
        return n.neighbor_allreduce_nonblocking(adapter, tensor, self_weight, src_weights,
                                                dst_weights, enable_topo_check, name)

    def neighbor_allreduce_nonblocking_(tensor, self_weight=None, src_weights=None,
                                        dst_weights=None, enable_topo_check=True, name=None):
        """Starts an in-place neighbor_allreduce and returns its handle."""
        return n.neighbor_allreduce_nonblocking(adapter, tensor, self_weight, src_weights,
                                                dst_weights, enable_topo_check, name, inplace=True)

    def neighbor_allreduce(tensor, self_weight=None, src_weights=None, dst_weights=None,
                           enable_topo_check=True, name=None):
        """Weighted average with the neighbours: self_weight·t + Σ src_weights[j]·t_j.

        Without weights: the static topology's (weighted, or uniform 1/(indegree+1)).
        ``dst_weights`` (list of ranks, or {rank: weight}) makes this call's topology
        dynamic; ``self_weight`` and ``src_weights`` then say what this rank receives.
        Only the ranks this call sends to or receives from are involved.
        """
        return c.synchronize(n.neighbor_allreduce_nonblocking(
            adapter, tensor, self_weight, src_weights, dst_weights, enable_topo_check, name,
            wait_follows=True))

    def neighbor_allreduce_(tensor, self_weight=None, src_weights=None, dst_weights=None,
                            enable_topo_check=True, name=None):
        """Like neighbor_allreduce, writing the result into ``tensor`` (returned)."""
        return c.synchronize(n.neighbor_allreduce_nonblocking(
            adapter, tensor, self_weight, src_weights, dst_weights, enable_topo_check, name,
            inplace=True, wait_follows=True))

    return _by_name(neighbor_allreduce_nonblocking, neighbor_allreduce_nonblocking_,
                    neighbor_allreduce, neighbor_allreduce_)


def _other_neighbor_ops(adapter):
    """neighbor_allgather, pair_gossip, hierarchical_neighbor_allreduce (+ nonblocking)."""
    def neighbor_allgather_nonblocking(tensor, src_ranks=None, dst_ranks=None, *,
                                       enable_topo_check=True, name=None):
        return n.neighbor_allgather_nonblocking(adapter, tensor, src_ranks, dst_ranks,
                                                enable_topo_check, name)

    def neighbor_allgather(tensor, src_ranks=None, dst_ranks=None, *, enable_topo_check=True,
                           name=None):
        """The in-neighbours' tensors concatenated on dim 0 (in_neighbor_ranks() order, or
        ``src_ranks`` order when ``src_ranks`` and ``dst_ranks`` give this call's peers).

        ``enable_topo_check`` (dynamic calls): receivers confirm to their senders, so a
        rank sending to one that does not expect it fails on both (as neighbor_allreduce).
        """
        return c.synchronize(n.neighbor_allgather_nonblocking(
            adapter, tensor, src_ranks, dst_ranks, enable_topo_check, name, wait_follows=True))

    def pair_gossip_nonblocking(tensor, target_rank, self_weight=0.5, pair_weight=0.5, name=None):
        return n.pair_gossip_nonblocking(adapter, tensor, target_rank, self_weight, pair_weight,
                                         name)

    def pair_gossip(tensor, target_rank, self_weight=0.5, pair_weight=0.5, name=None):
        """self_weight·t + pair_weight·(target_rank's t); target_rank pairs with this rank."""
        return c.synchronize(n.pair_gossip_nonblocking(adapter, tensor, target_rank, self_weight,
                                                       pair_weight, name, wait_follows=True))

    def hierarchical_neighbor_allreduce_nonblocking(tensor, self_weight=None,
                                                    src_machine_weights=None,
                                                    dst_machine_weights=None,
                                                    enable_topo_check=False, name=None):
        return n.hierarchical_neighbor_allreduce_nonblocking(
            adapter, tensor, self_weight, src_machine_weights, dst_machine_weights,
            enable_topo_check, name)

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
        return c.synchronize(n.hierarchical_neighbor_allreduce_nonblocking(
            adapter, tensor, self_weight, src_machine_weights, dst_machine_weights,
            enable_topo_check, name, wait_follows=True))

    return _by_name(neighbor_allgather_nonblocking, neighbor_allgather, pair_gossip_nonblocking,
                    pair_gossip, hierarchical_neighbor_allreduce_nonblocking,
                    hierarchical_neighbor_allreduce)
