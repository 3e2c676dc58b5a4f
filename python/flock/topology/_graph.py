"""Graph: flock's topology type, a weighted directed graph on the nodes 0 .. n-1.

Vocabulary (the same as the C++ library flock::topology and as Bluefog):

- ``W[i][j]`` is the weight of the edge i -> j: what i sends to j, the factor j
  applies to i's value when it averages. Row i is what i sends, column j what j
  receives. The self loop i -> i carries i's *self weight* ``W[i][i]``.
- *weighted* is a flag carried with the graph: True when the weights are meant
  as mixing weights, False when only the edges matter (the runtime then gives
  every node uniform weights ``1/(in-degree + 1)``).
- ``in_neighbors(i)`` / ``out_neighbors(i)``: predecessors / successors of i
  **without i**, sorted (Bluefog's ``in_neighbor_ranks()``).

A Graph also reads like the ``networkx.DiGraph`` Bluefog uses (edges carry a
``"weight"`` attribute), so code that inspects topologies keeps working:
``number_of_nodes()``, ``predecessors(i)`` / ``successors(i)`` (i included when it
has a self loop, as in networkx), ``has_edge``, ``in_degree`` / ``out_degree`` /
``degree`` (a self loop counts once in each, as in networkx), ``nodes``, ``edges``
and ``edges(data=True)``, ``g[i][j]["weight"]``, ``len(g)``, ``i in g``. There is no
``size()``: networkx's ``size()`` counts edges; say ``number_of_nodes()``.

Conversions: ``to_networkx()`` / ``Graph.from_networkx(g)``, ``to_numpy()`` /
``Graph.from_numpy(w)``; ``as_graph`` (in _convert.py) accepts any of them.
"""

import math
import numbers

import numpy as np

from flock._core_loader import core
from flock.errors import FlockInvalidArgumentError
from flock.topology._views import EdgeView, NodeView, index_arg

_core_topology = core.topology


class Graph:
    """A weighted directed graph; ``Graph(n)`` has n nodes and no edges (not even self loops)."""

    __slots__ = ("_g",)

    def __init__(self, size=0, weighted=False):
        self._g = _core_topology.Graph(index_arg("size", size), bool(weighted))

    @classmethod
    def _wrap(cls, core_graph):
        graph = cls.__new__(cls)
        graph._g = core_graph
        return graph

    # ---- flock's own queries and edits

    def number_of_nodes(self):
        return self._g.size()

    def number_of_edges(self, u=None, v=None):
        """All edges (self loops included), or 1/0 for the edge u -> v."""
        if u is None:
            return self._g.num_edges()
        return int(self.has_edge(u, v))

    def is_weighted(self):
        return self._g.is_weighted()

    def set_weighted(self, weighted=True):
        self._g.set_weighted(bool(weighted))

    def weight(self, u, v):
        """W[u][v], 0.0 when there is no edge u -> v."""
        return self._g.weight(index_arg("u", u), index_arg("v", v))

    def self_weight(self, node):
        return self._g.self_weight(index_arg("node", node))

    def in_neighbors(self, node):
        """Nodes sending to ``node``, without ``node``, sorted."""
        return self._g.in_neighbors(index_arg("node", node))

    def out_neighbors(self, node):
        """Nodes ``node`` sends to, without ``node``, sorted."""
        return self._g.out_neighbors(index_arg("node", node))

    def add_edge(self, u, v, weight=1.0):
        """Adds u -> v, or replaces its weight. Weights must be finite and >= 0."""
        self._g.add_edge(index_arg("u", u), index_arg("v", v), _weight_arg(weight))

    def set_self_weight(self, node, weight):
        self.add_edge(node, node, weight)

    def remove_edge(self, u, v):
        if not self._g.remove_edge(index_arg("u", u), index_arg("v", v)):
            raise FlockInvalidArgumentError(
                "remove_edge({}, {}): there is no such edge".format(u, v))

    def copy(self):
        return Graph._wrap(self._g.copy())

    def to_numpy(self):
        """The dense n x n weight matrix W as a float64 numpy array."""
        return np.ascontiguousarray(self._g.to_dense())

    def to_networkx(self):
        """A ``networkx.DiGraph`` with nodes 0..n-1 and one edge per edge, weight in ``"weight"``.

        The weighted flag goes to ``graph.graph["weighted"]`` so that
        ``Graph.from_networkx`` gives this graph back.
        """
        import networkx as nx
        result = nx.DiGraph(weighted=self.is_weighted())
        result.add_nodes_from(range(self.number_of_nodes()))
        result.add_weighted_edges_from(self._g.edges())
        return result

    @classmethod
    def from_networkx(cls, graph, weighted=None):
        return graph_from_networkx(graph, weighted)

    @classmethod
    def from_numpy(cls, matrix, weighted=True):
        """One edge per nonzero entry of the square matrix ``matrix`` (W[i][j] = matrix[i, j])."""
        return graph_from_numpy(matrix, weighted)

    # ---- networkx-style reading (Bluefog scripts use these on topologies)

    def is_directed(self):
        return True

    def is_multigraph(self):
        return False

    def has_node(self, node):
        return _is_index(node) and 0 <= node < self.number_of_nodes()

    def has_edge(self, u, v):
        return _is_index(u) and _is_index(v) and self._g.has_edge(int(u), int(v))

    def predecessors(self, node):
        """Iterator over the nodes sending to ``node``, ``node`` included if it has a self loop."""
        return iter(self._g.in_edges(index_arg("node", node)))

    def successors(self, node):
        """Iterator over the nodes ``node`` sends to, ``node`` included if it has a self loop."""
        return iter(self._g.out_edges(index_arg("node", node)))

    neighbors = successors

    def in_degree(self, node=None, weight=None):
        """Edges into ``node`` (a self loop counts), or the sum of their weights with
        ``weight="weight"``; without ``node``, a list of (node, degree) pairs."""
        return self._degree(node, weight, lambda n: self._g.in_edges(n))

    def out_degree(self, node=None, weight=None):
        return self._degree(node, weight, lambda n: self._g.out_edges(n))

    def degree(self, node=None, weight=None):
        """in_degree + out_degree (a self loop counts twice, as in networkx)."""
        if node is None:
            return [(n, self.degree(n, weight)) for n in range(self.number_of_nodes())]
        return self.in_degree(node, weight) + self.out_degree(node, weight)

    def _degree(self, node, weight, edges_of):
        if node is None:
            return [(n, self._degree(n, weight, edges_of)) for n in range(self.number_of_nodes())]
        edges = edges_of(index_arg("node", node))
        return sum(edges.values()) if weight is not None else len(edges)

    @property
    def nodes(self):
        return NodeView(range(self.number_of_nodes()))

    @property
    def edges(self):
        return EdgeView(self)

    def __len__(self):
        return self.number_of_nodes()

    def __iter__(self):
        return iter(range(self.number_of_nodes()))

    def __contains__(self, node):
        return self.has_node(node)

    def __getitem__(self, node):
        """``g[i]`` = {j: {"weight": W[i][j]}} over i's successors, as networkx's ``G[i]``."""
        out = self._g.out_edges(index_arg("node", node))
        return {j: {"weight": w} for j, w in out.items()}

    def __repr__(self):
        return "<flock.topology.Graph: {} nodes, {} edges, {}>".format(
            self.number_of_nodes(), self._g.num_edges(),
            "weighted" if self.is_weighted() else "unweighted")

    def __reduce__(self):
        return (_from_json, (_core_topology.to_json_string(self._g),))


# ---- conversions from networkx and numpy (as_graph in _convert.py picks one)

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


def _from_json(text):
    return Graph._wrap(_core_topology.from_json_string(text))


def _is_index(value):
    try:
        index_arg("node", value)
        return True
    except FlockInvalidArgumentError:
        return False


def _weight_arg(weight):
    try:
        return float(weight)
    except (TypeError, ValueError):
        raise FlockInvalidArgumentError(
            "a weight must be a number, got {!r}".format(weight)) from None
