"""The topology names that flock, flock.torch and flock.numpy all export.

The runtime API (set_topology, load_topology, ...; see _topology_runtime.py)
and the generators and helpers Bluefog scripts import from ``bluefog.torch``
(ExponentialGraph, IsTopologyEquivalent, GetDynamicOnePeerSendRecvRanks, ...;
see flock.topology_util: the generators return networkx DiGraphs, as Bluefog's).
``from flock._topology_exports import *`` brings them all.
"""

from flock._topology_runtime import (  # noqa: F401
    in_neighbor_machine_ranks, in_neighbor_ranks, is_machine_topo_weighted, is_topo_weighted,
    load_machine_topology, load_topology, out_neighbor_machine_ranks, out_neighbor_ranks,
    set_machine_topology, set_topology)
from flock.topology_util import (  # noqa: F401
    ExponentialGraph, ExponentialTwoGraph, FullyConnectedGraph, GetDynamicOnePeerSendRecvRanks,
    GetExp2DynamicSendRecvMachineRanks, GetInnerOuterExpo2DynamicSendRecvRanks,
    GetInnerOuterRingDynamicSendRecvRanks, GetRecvWeights, GetSendWeights,
    InferDestinationFromSourceRanks, InferSourceFromDestinationRanks, IsRegularGraph,
    IsTopologyEquivalent, MeshGrid2DGraph, RingGraph, StarGraph, SymmetricExponentialGraph)

__all__ = [
    # runtime (needs init())
    "set_topology", "load_topology", "is_topo_weighted", "in_neighbor_ranks",
    "out_neighbor_ranks", "set_machine_topology", "load_machine_topology",
    "is_machine_topo_weighted", "in_neighbor_machine_ranks", "out_neighbor_machine_ranks",
    # generators and helpers (Bluefog's topology_util names)
    "ExponentialTwoGraph", "ExponentialGraph", "SymmetricExponentialGraph", "MeshGrid2DGraph",
    "StarGraph", "RingGraph", "FullyConnectedGraph", "IsTopologyEquivalent", "IsRegularGraph",
    "GetRecvWeights", "GetSendWeights", "GetDynamicOnePeerSendRecvRanks",
    "GetExp2DynamicSendRecvMachineRanks", "GetInnerOuterRingDynamicSendRecvRanks",
    "GetInnerOuterExpo2DynamicSendRecvRanks", "InferSourceFromDestinationRanks",
    "InferDestinationFromSourceRanks",
]
