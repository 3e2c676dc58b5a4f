"""Turning what users pass as a topology into a flock Graph.

Every function of flock that takes a topology accepts

- a ``flock.topology.Graph`` (used as is),
- a ``networkx.DiGraph`` as Bluefog builds them: nodes are the integers 0..n-1,
  W[i][j] is the ``"weight"`` attribute of the edge i -> j (1.0 when absent) and
  self loops are self weights. An undirected ``networkx.Graph`` counts each edge
  both ways. Weighted when every edge has a "weight" (or ``graph.graph["weighted"]``
  says so, as ``Graph.to_networkx`` records it),
- a square numpy array W (an edge per nonzero entry, weighted).

Anything else, nodes that are not 0..n-1, and negative or non-finite weights
raise FlockInvalidArgumentError. Only APIs present in networkx 2.x and 3.x are
used, and networkx is imported only when it is installed and already in use.
"""

import sys

import numpy as np

from flock.errors import FlockInvalidArgumentError
from flock.topology._graph import Graph, _core_topology, graph_from_networkx, graph_from_numpy


def as_graph(topology, what="topology"):
    """``topology`` as a flock Graph (the same object when it already is one)."""
    if isinstance(topology, Graph):
        return topology
    if isinstance(topology, _core_topology.Graph):
        return Graph._wrap(topology)
    nx = sys.modules.get("networkx")
    if nx is not None and isinstance(topology, nx.Graph):
        return graph_from_networkx(topology)
    if isinstance(topology, np.ndarray):
        return graph_from_numpy(topology)
    raise FlockInvalidArgumentError(
        "{} must be a flock.topology.Graph, a networkx.DiGraph or a square numpy array, "
        "got {}".format(what, type(topology).__name__))
