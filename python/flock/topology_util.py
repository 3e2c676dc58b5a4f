"""Bluefog's ``topology_util``, speaking networkx: ``from flock import topology_util``.

This module stands in for ``from bluefog.common import topology_util``, and
flock.torch / flock.numpy re-export its names, so a Bluefog program sees the
graphs it expects:

- every generator returns a ``networkx.DiGraph`` built as Bluefog builds it:
  nodes 0..n-1, one edge per nonzero W[i][j] in row-major order, self loops
  included, the weight in the ``"weight"`` edge attribute. ``nx.to_numpy_array(g)``,
  ``g.edges(data=True)`` and ``isinstance(g, nx.DiGraph)`` work as in Bluefog;
- every helper (IsTopologyEquivalent, GetRecvWeights, the dynamic generators, ...)
  takes a networkx graph, a flock ``Graph`` or a square numpy array;
- ``isPowerOf(x, base)`` as Bluefog's, exact for every integer (Bluefog's
  floating-point logarithm misses some powers, e.g. isPowerOf(243, 3)).

The weights come from flock's C++ topology library. Its own graph type,
``flock.topology.Graph``, stays the tool for large graphs and analysis (spectral
gap, consensus rates): ``Graph.from_networkx(g)`` and ``graph.to_networkx()``
convert without loss. Without networkx installed, the generators here return
flock Graphs, which read like DiGraphs.
"""

import functools
import numbers

from flock.errors import FlockInvalidArgumentError
from flock import topology as _native
from flock.topology import (  # noqa: F401  (these take any topology form already)
    GetDynamicOnePeerSendRecvRanks, GetExp2DynamicSendRecvMachineRanks,
    GetInnerOuterExpo2DynamicSendRecvRanks, GetInnerOuterRingDynamicSendRecvRanks,
    GetRecvWeights, GetSendWeights, InferDestinationFromSourceRanks,
    InferSourceFromDestinationRanks, IsRegularGraph, IsTopologyEquivalent)


def as_networkx(topology):
    """``topology`` (flock Graph, networkx graph or numpy matrix) as a networkx DiGraph.

    A DiGraph is returned as it is; without networkx installed, a flock Graph.
    """
    try:
        import networkx as nx
    except ImportError:
        return _native.as_graph(topology)
    if isinstance(topology, nx.DiGraph):
        return topology
    return _native.as_graph(topology).to_networkx()


def _returning_networkx(native_generator):
    @functools.wraps(native_generator)
    def generator(*args, **kwargs):
        return as_networkx(native_generator(*args, **kwargs))
    generator.__doc__ = "{} (a networkx.DiGraph; see flock.topology.{} for flock's Graph)".format(
        (native_generator.__doc__ or "").strip(), native_generator.__name__)
    return generator


ExponentialTwoGraph = _returning_networkx(_native.ExponentialTwoGraph)
ExponentialGraph = _returning_networkx(_native.ExponentialGraph)
SymmetricExponentialGraph = _returning_networkx(_native.SymmetricExponentialGraph)
MeshGrid2DGraph = _returning_networkx(_native.MeshGrid2DGraph)
StarGraph = _returning_networkx(_native.StarGraph)
RingGraph = _returning_networkx(_native.RingGraph)
FullyConnectedGraph = _returning_networkx(_native.FullyConnectedGraph)


def isPowerOf(x, base):  # noqa: N802  (Bluefog's name)
    """True when ``x`` is ``base`` to a non-negative integer power (x > 0, integer base > 1)."""
    if isinstance(base, bool) or not isinstance(base, numbers.Integral) or base <= 1:
        raise FlockInvalidArgumentError(
            "isPowerOf: base must be an integer larger than 1, got {!r}".format(base))
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or x <= 0:
        raise FlockInvalidArgumentError(
            "isPowerOf: x must be a positive number, got {!r}".format(x))
    if x != int(x):
        return False
    x, power = int(x), 1
    while power < x:
        power *= int(base)
    return power == x


__all__ = [
    "ExponentialTwoGraph", "ExponentialGraph", "SymmetricExponentialGraph", "MeshGrid2DGraph",
    "StarGraph", "RingGraph", "FullyConnectedGraph", "isPowerOf", "IsTopologyEquivalent",
    "IsRegularGraph", "GetRecvWeights", "GetSendWeights", "GetDynamicOnePeerSendRecvRanks",
    "GetExp2DynamicSendRecvMachineRanks", "GetInnerOuterRingDynamicSendRecvRanks",
    "GetInnerOuterExpo2DynamicSendRecvRanks", "InferSourceFromDestinationRanks",
    "InferDestinationFromSourceRanks", "as_networkx",
]
