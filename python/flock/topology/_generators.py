"""Bluefog's static topology generators and helpers, and flock's analysis, on flock Graphs.

Generators (same names, arguments, edges and weights as Bluefog's
``topology_util``; each returns a weighted, doubly stochastic Graph; row i sends
to i + d for each distance d of the table in docs/topology.md):
ExponentialTwoGraph, ExponentialGraph, SymmetricExponentialGraph,
MeshGrid2DGraph, StarGraph, RingGraph, FullyConnectedGraph, and flock's
CirculantGraph(size, distances).

Helpers (Bluefog's names): IsTopologyEquivalent, IsRegularGraph,
GetRecvWeights(topo, rank) -> (W[r][r], {j: W[j][r]}),
GetSendWeights(topo, rank) -> (W[r][r], {j: W[r][j]}).

Analysis (flock's names, as in C++): is_row/column/doubly_stochastic,
is_strongly_connected, is_regular, is_topology_equivalent, spectral_gap,
second_largest_eigenvalue_modulus, predicted_consensus_iterations, and topology
files (save_json / load_json / to_json_string / from_json_string).

Every ``topo`` argument may be a flock Graph, a networkx DiGraph or a square
numpy array. Invalid arguments raise FlockInvalidArgumentError.
"""

from flock.errors import FlockInvalidArgumentError
from flock.topology._convert import as_graph
from flock.topology._graph import Graph, _core_topology as _t
from flock.topology._views import index_arg

DEFAULT_TOLERANCE = 1e-9


def _graph(topo):
    return as_graph(topo)._g


# ---- generators

def CirculantGraph(size, distances):
    """i sends to (i + d) mod size for each d of ``distances`` (1 <= d < size), uniform weights."""
    return Graph._wrap(_t.CirculantGraph(index_arg("size", size),
                                         [index_arg("distance", d) for d in distances]))


def ExponentialTwoGraph(size):
    """i sends to i + 1, i + 2, i + 4, ... (powers of two below size); uniform weights."""
    return Graph._wrap(_t.ExponentialTwoGraph(index_arg("size", size)))


def ExponentialGraph(size, base=2):
    """i sends to i + base^k for every power of ``base`` below size; uniform weights."""
    return Graph._wrap(_t.ExponentialGraph(index_arg("size", size), index_arg("base", base)))


def SymmetricExponentialGraph(size, base=4):
    """Distances d whose shorter way round, min(d, size - d), is a power of ``base``; undirected."""
    return Graph._wrap(_t.SymmetricExponentialGraph(index_arg("size", size),
                                                    index_arg("base", base)))


def DefaultMeshShape(size):
    """(rows, cols) of MeshGrid2DGraph's default shape: closest factor pair, rows <= cols."""
    return tuple(_t.DefaultMeshShape(index_arg("size", size)))


def MeshGrid2DGraph(size, shape=None):
    """rows x cols grid without wrap-around, Metropolis-Hastings weights."""
    if shape is None:
        shape = (0, 0)
    else:
        try:
            rows, cols = shape
        except (TypeError, ValueError):
            raise FlockInvalidArgumentError("MeshGrid2DGraph: shape must be a pair (rows, cols), "
                                            "got {!r}".format(shape)) from None
        shape = (index_arg("shape[0]", rows), index_arg("shape[1]", cols))
        if shape[0] < 1 or shape[1] < 1:
            raise FlockInvalidArgumentError(
                "MeshGrid2DGraph: shape must be positive, got {}".format(shape))
    return Graph._wrap(_t.MeshGrid2DGraph(index_arg("size", size), shape))


def StarGraph(size, center_rank=0):
    """Leaves linked both ways to ``center_rank``; a leaf keeps 1 - 1/size, the center 1/size."""
    return Graph._wrap(_t.StarGraph(index_arg("size", size), index_arg("center_rank", center_rank)))


def RingGraph(size, connect_style=0):
    """connect_style 0: both neighbours (1/3 each); 1: sends to i - 1; 2: sends to i + 1 (1/2)."""
    return Graph._wrap(_t.RingGraph(index_arg("size", size),
                                    index_arg("connect_style", connect_style)))


def FullyConnectedGraph(size):
    """Every node sends to every node; every weight 1/size."""
    return Graph._wrap(_t.FullyConnectedGraph(index_arg("size", size)))


# ---- Bluefog's helpers

def IsTopologyEquivalent(topo1, topo2):
    """Same size, same edges (self loops included) and weights within 1e-9. None -> False."""
    if topo1 is None or topo2 is None:
        return False
    return _t.is_topology_equivalent(_graph(topo1), _graph(topo2), DEFAULT_TOLERANCE)


def IsRegularGraph(topo):
    """Every node has the same in + out degree (networkx's degree; a self loop counts twice)."""
    return _t.is_regular(_graph(topo))


def GetRecvWeights(topo, rank):
    """(self weight W[r][r], {j: W[j][r]} over r's in-neighbours)."""
    return _t.get_recv_weights(_graph(topo), index_arg("rank", rank))


def GetSendWeights(topo, rank):
    """(self weight W[r][r], {j: W[r][j]} over r's out-neighbours)."""
    return _t.get_send_weights(_graph(topo), index_arg("rank", rank))


# ---- flock's analysis

def is_row_stochastic(topo, tol=DEFAULT_TOLERANCE):
    """Every row of W sums to 1: every node sends out a total weight of 1."""
    return _t.is_row_stochastic(_graph(topo), tol)


def is_column_stochastic(topo, tol=DEFAULT_TOLERANCE):
    """Every column of W sums to 1: every node takes an average of what it receives."""
    return _t.is_column_stochastic(_graph(topo), tol)


def is_doubly_stochastic(topo, tol=DEFAULT_TOLERANCE):
    """Both: repeated mixing converges to the exact mean (when strongly connected)."""
    return _t.is_doubly_stochastic(_graph(topo), tol)


def is_strongly_connected(topo):
    return _t.is_strongly_connected(_graph(topo))


def is_regular(topo):
    return _t.is_regular(_graph(topo))


def is_topology_equivalent(topo1, topo2, tol=DEFAULT_TOLERANCE):
    return _t.is_topology_equivalent(_graph(topo1), _graph(topo2), tol)


def second_largest_eigenvalue_modulus(topo, method="auto"):
    """|lambda_2| of a stochastic W (0 for one node).

    ``method``: "auto" (circulant W exactly, else dense up to 400 nodes, else
    sparse), "dense", "circulant" or "sparse" (docs/topology.md). A W that is not
    row- or column-stochastic, or a graph that is not strongly connected, is an
    error that says so."""
    return _t.second_largest_eigenvalue_modulus(_graph(topo), method)


def spectral_gap(topo, method="auto"):
    """1 - |lambda_2|: 1 for one node and for FullyConnectedGraph; errors as
    second_largest_eigenvalue_modulus."""
    return _t.spectral_gap(_graph(topo), method)


def predicted_consensus_iterations(topo, eps, method="auto"):
    """ceil(log(eps) / log|lambda_2|) mixing steps to shrink the error by eps; None: never
    (not strongly connected, or |lambda_2| = 1)."""
    return _t.predicted_consensus_iterations(_graph(topo), float(eps), method)


# ---- topology files (the JSON format of docs/topology.md)

def to_json_string(topo):
    return _t.to_json_string(_graph(topo))


def from_json_string(text):
    return Graph._wrap(_t.from_json_string(text))


def save_json(topo, path):
    """Writes the topology to a JSON file (format "flock-topology", version 1)."""
    _t.save_json_file(_graph(topo), str(path))


def load_json(path):
    return Graph._wrap(_t.load_json_file(str(path)))
