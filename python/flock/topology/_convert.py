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

import math
import numbers
import sys

import numpy as np

from flock.errors import FlockInvalidArgumentError
from flock.topology._graph import Graph, _core_topology


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


def graph_from_numpy(matrix, weighted=True):
    try:
        w = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise FlockInvalidArgumentError(
            "a topology matrix must hold numbers: {}".format(error)) from None
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise FlockInvalidArgumentError(
            "a topology matrix must be square (n x n), got shape {}".format(w.shape))
    return Graph._wrap(_core_topology.Graph.from_dense(w, bool(weighted)))


def graph_from_networkx(graph, weighted=None):
    """A flock Graph with the nodes, edges and "weight" attributes of a networkx graph."""
    if graph.is_multigraph():
        raise FlockInvalidArgumentError(
            "a topology cannot be a networkx multigraph (parallel edges have no single weight)")
    size = graph.number_of_nodes()
    for node in graph.nodes:
        if isinstance(node, bool) or not isinstance(node, numbers.Integral) or not 0 <= node < size:
            raise FlockInvalidArgumentError(
                "the nodes of a networkx topology must be the ranks 0 .. {} (the integers "
                "below its node count {}); found node {!r}".format(size - 1, size, node))
    edges, all_weighted = _networkx_edges(graph)
    if weighted is None:
        weighted = graph.graph.get("weighted", all_weighted and len(edges) > 0)
    return Graph._wrap(_core_topology.Graph.from_edges(size, edges, bool(weighted)))


def _networkx_edges(graph):
    """[(u, v, w)] of a networkx graph (both ways when undirected), and whether all had a weight."""
    edges = []
    all_weighted = True
    for u, v, data in graph.edges(data=True):
        all_weighted = all_weighted and "weight" in data
        weight = _edge_weight(u, v, data.get("weight", 1.0))
        edges.append((int(u), int(v), weight))
        if not graph.is_directed() and u != v:
            edges.append((int(v), int(u), weight))
    return edges, all_weighted


def _edge_weight(u, v, weight):
    try:
        value = float(weight)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise FlockInvalidArgumentError(
            "edge {} -> {} of the topology has weight {!r}: weights must be finite numbers "
            ">= 0".format(u, v, weight))
    return value
