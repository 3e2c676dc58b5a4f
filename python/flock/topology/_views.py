"""Small helpers of flock.topology: networkx-like node/edge views and argument checks.

``g.nodes`` and ``g.edges`` behave like networkx's views where Bluefog code uses
them: iterate them, take ``len``, test membership, or call them
(``g.edges(data=True)`` yields ``(u, v, {"weight": w})``, ``g.edges(data="weight")``
yields ``(u, v, w)``). Arguments that must be node numbers go through
``index_arg``, which raises FlockInvalidArgumentError naming the argument.
"""

import operator

from flock.errors import FlockInvalidArgumentError

def index_arg(name, value, bits=32):
    """``value`` as a Python int (numpy integers accepted, bool and float refused) that fits
    a signed integer of ``bits`` bits."""
    if isinstance(value, bool):
        raise FlockInvalidArgumentError("{} must be an integer, got {!r}".format(name, value))
    try:
        number = operator.index(value)
    except TypeError:
        raise FlockInvalidArgumentError(
            "{} must be an integer, got {!r}".format(name, value)) from None
    if abs(number) >= 2 ** (bits - 1):
        raise FlockInvalidArgumentError("{} = {} is too large".format(name, number))
    return number


class NodeView(tuple):
    """The nodes 0..n-1; ``g.nodes()`` lists them, ``g.nodes(data=True)`` as (node, {}) pairs."""

    def __call__(self, data=False):
        return [(n, {}) for n in self] if data else list(self)


class EdgeView:
    """Edges (u, v) sorted by (u, v), self loops included."""

    __slots__ = ("_graph",)

    def __init__(self, graph):
        self._graph = graph

    def _edges(self, nbunch=None):
        edges = self._graph._g.edges()
        if nbunch is None:
            return edges
        wanted = {nbunch} if self._graph.has_node(nbunch) else set(nbunch)
        return [e for e in edges if e[0] in wanted]

    def __iter__(self):
        return iter([(u, v) for u, v, _ in self._edges()])

    def __len__(self):
        return self._graph._g.num_edges()

    def __contains__(self, edge):
        try:
            u, v = edge
        except (TypeError, ValueError):
            return False
        return self._graph.has_edge(u, v)

    def __getitem__(self, edge):
        u, v = edge
        if not self._graph.has_edge(u, v):
            raise KeyError(edge)
        return {"weight": self._graph.weight(u, v)}

    def __call__(self, nbunch=None, data=False, default=None):
        """networkx's ``G.edges(nbunch, data, default)`` with "weight" the only attribute."""
        edges = self._edges(nbunch)
        if data is False:
            return [(u, v) for u, v, _ in edges]
        if data is True:
            return [(u, v, {"weight": w}) for u, v, w in edges]
        return [(u, v, w if data == "weight" else default) for u, v, w in edges]

    def __repr__(self):
        return "EdgeView({})".format(list(self))
