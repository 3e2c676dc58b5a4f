"""Dynamic topologies: who talks to whom at iteration k.

Two forms of the same schedules (the C++ classes of flock::topology):

- **Schedule objects**, asked for any iteration k >= 0 and node:
  ``DynamicOnePeer(topo)``, ``Exp2DynamicMachine(world_size, local_size)`` (nodes
  are machines), ``InnerOuterRingDynamic(world_size, local_size)``,
  ``InnerOuterExpo2Dynamic(world_size, local_size)``; each has ``send_ranks(k,
  node)``, ``recv_ranks(k, node)``, ``weights(k, node)`` -> (self_weight,
  src_weights, dst_weights) with the uniform rule, and ``mixing_graph(k)``.
- **Bluefog's generators**, yielding ``(send_ranks, recv_ranks)`` once per
  iteration from k = 0: GetDynamicOnePeerSendRecvRanks(topo, self_rank),
  GetExp2DynamicSendRecvMachineRanks(world_size, local_size, self_rank,
  local_rank), GetInnerOuterRingDynamicSendRecvRanks(world_size, local_size,
  self_rank), GetInnerOuterExpo2DynamicSendRecvRanks(world_size, local_size,
  self_rank). Arguments are checked when the generator is made, not at its
  first ``next()``.

Lists are sorted and never contain the node itself. The collective helpers
InferSourceFromDestinationRanks / InferDestinationFromSourceRanks are in
_infer.py.
"""

from flock.errors import FlockInvalidArgumentError
from flock.topology._convert import as_graph
from flock.topology._graph import Graph, _core_topology as _t
from flock.topology._views import index_arg


class Schedule:
    """A dynamic schedule: a pure function of the iteration k and the node."""

    __slots__ = ("_s",)

    def __init__(self, core_schedule):
        self._s = core_schedule

    def size(self):
        """Number of nodes (ranks, or machines for Exp2DynamicMachine)."""
        return self._s.size()

    def send_ranks(self, k, node):
        return self._s.send_ranks(index_arg("k", k, 64), index_arg("node", node))

    def recv_ranks(self, k, node):
        return self._s.recv_ranks(index_arg("k", k, 64), index_arg("node", node))

    def weights(self, k, node):
        """(self_weight, {src: weight}, {dst: 1.0}): neighbor_allreduce's arguments at k."""
        return self._s.weights(index_arg("k", k, 64), index_arg("node", node))

    def mixing_graph(self, k):
        """The Graph of iteration k with the uniform weights (column-stochastic)."""
        return Graph._wrap(self._s.mixing_graph(index_arg("k", k, 64)))

    def __getattr__(self, name):
        # Schedule-specific queries: turn_list, machine_of, machine_hop, outgoing_local_rank, ...
        return getattr(self._s, name)


def DynamicOnePeer(topo):
    """Each rank sends to one out-neighbour of ``topo`` per iteration, taking them in turn."""
    return Schedule(_t.DynamicOnePeer(as_graph(topo)._g))


def Exp2DynamicMachine(world_size, local_size):
    """Machine m sends to m + 2^(k mod (floor(log2(M-1)) + 1)) and receives from m minus that."""
    return Schedule(_t.Exp2DynamicMachine(index_arg("world_size", world_size),
                                          index_arg("local_size", local_size)))


def InnerOuterRingDynamic(world_size, local_size):
    return Schedule(_t.InnerOuterRingDynamic(index_arg("world_size", world_size),
                                             index_arg("local_size", local_size)))


def InnerOuterExpo2Dynamic(world_size, local_size):
    return Schedule(_t.InnerOuterExpo2Dynamic(index_arg("world_size", world_size),
                                              index_arg("local_size", local_size)))


def _iterate(schedule, node):
    k = 0
    while True:
        yield schedule.send_ranks(k, node), schedule.recv_ranks(k, node)
        k += 1


def _node(name, value, size):
    node = index_arg(name, value)
    if not 0 <= node < size:
        raise FlockInvalidArgumentError(
            "{} = {} is out of range [0, {})".format(name, node, size))
    return node


def GetDynamicOnePeerSendRecvRanks(topo, self_rank):
    """Yields ([the out-neighbour self_rank sends to], [ranks sending to it]) per iteration."""
    schedule = DynamicOnePeer(topo)
    return _iterate(schedule, _node("self_rank", self_rank, schedule.size()))


def GetExp2DynamicSendRecvMachineRanks(world_size, local_size, self_rank, local_rank):
    """Yields ([machine to send to], [machine to receive from]) for self_rank's machine."""
    schedule = Exp2DynamicMachine(world_size, local_size)
    self_rank = _node("self_rank", self_rank, world_size)
    if self_rank % local_size != index_arg("local_rank", local_rank):
        raise FlockInvalidArgumentError(
            "GetExp2DynamicSendRecvMachineRanks needs a homogeneous layout (rank = machine * "
            "local_size + local_rank): self_rank {} with local_size {} has local rank {}, not "
            "{}".format(self_rank, local_size, self_rank % local_size, local_rank))
    return _iterate(schedule, schedule.machine_of(self_rank))


def GetInnerOuterRingDynamicSendRecvRanks(world_size, local_size, self_rank):
    """Yields ([rank to send to], [rank to receive from]): one outgoing local rank per machine."""
    schedule = InnerOuterRingDynamic(world_size, local_size)
    return _iterate(schedule, _node("self_rank", self_rank, schedule.size()))


def GetInnerOuterExpo2DynamicSendRecvRanks(world_size, local_size, self_rank):
    """As GetInnerOuterRingDynamicSendRecvRanks with exponential-two hops inside and outside."""
    schedule = InnerOuterExpo2Dynamic(world_size, local_size)
    return _iterate(schedule, _node("self_rank", self_rank, schedule.size()))
