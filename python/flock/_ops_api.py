"""Builds a framework module's op functions from its adapter.

flock.torch and flock.numpy expose the same functions with the same
signatures; only the adapter differs. ``make_ops(adapter)`` returns them as a
dict for the framework module to put in its namespace.
"""

from flock import _collectives as c


def make_ops(adapter):
    def allreduce_nonblocking(tensor, average=None, name=None, is_hierarchical_local=False,
                              op=None):
        """Starts an allreduce (average by default) and returns its handle."""
        return c.allreduce_nonblocking(adapter, tensor, average, name, op, is_hierarchical_local)

    def allreduce_nonblocking_(tensor, average=None, name=None, is_hierarchical_local=False,
                               op=None):
        """Starts an in-place allreduce and returns its handle."""
        return c.allreduce_nonblocking(adapter, tensor, average, name, op, is_hierarchical_local,
                                       inplace=True)

    def allreduce(tensor, average=None, name=None, is_hierarchical_local=False, op=None):
        """The reduction over all ranks (average by default; ``op`` picks sum/min/max/product).

        ``is_hierarchical_local=True`` reduces over the ranks of this machine only.
        """
        return c.synchronize(allreduce_nonblocking(tensor, average, name, is_hierarchical_local, op))

    def allreduce_(tensor, average=None, name=None, is_hierarchical_local=False, op=None):
        """Like allreduce, writing the result into ``tensor`` (returned)."""
        return c.synchronize(allreduce_nonblocking_(tensor, average, name, is_hierarchical_local, op))

    def broadcast_nonblocking(tensor, root_rank, name=None):
        return c.broadcast_nonblocking(adapter, tensor, root_rank, name)

    def broadcast_nonblocking_(tensor, root_rank, name=None):
        return c.broadcast_nonblocking(adapter, tensor, root_rank, name, inplace=True)

    def broadcast(tensor, root_rank, name=None):
        """A copy of ``root_rank``'s tensor on every rank."""
        return c.synchronize(broadcast_nonblocking(tensor, root_rank, name))

    def broadcast_(tensor, root_rank, name=None):
        """Overwrites ``tensor`` with ``root_rank``'s tensor (returned)."""
        return c.synchronize(broadcast_nonblocking_(tensor, root_rank, name))

    def allgather_nonblocking(tensor, name=None):
        return c.allgather_nonblocking(adapter, tensor, name)

    def allgather(tensor, name=None):
        """Every rank's tensor concatenated along dim 0 (dim 0 may differ between ranks)."""
        return c.synchronize(allgather_nonblocking(tensor, name))

    ops = dict(allreduce_nonblocking=allreduce_nonblocking,
               allreduce_nonblocking_=allreduce_nonblocking_, allreduce=allreduce,
               allreduce_=allreduce_, broadcast_nonblocking=broadcast_nonblocking,
               broadcast_nonblocking_=broadcast_nonblocking_, broadcast=broadcast,
               broadcast_=broadcast_, allgather_nonblocking=allgather_nonblocking,
               allgather=allgather, barrier=c.barrier, synchronize=c.synchronize,
               wait=c.synchronize, poll=c.poll)
    return ops
