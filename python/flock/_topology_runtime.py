"""The job's topologies (they need ``init()``): Bluefog's set_topology and friends.

The rank topology (nodes = ranks, ``size()`` of them) says whom each rank
averages with in neighbor_allreduce; the machine topology (nodes = machines,
``machine_size()`` of them) does the same for hierarchical_neighbor_allreduce.
Both are stored in the C++ Runtime, where the neighbor ops read them.

Setting one is **collective**, because every rank must use the same graph:

1. each rank checks its argument locally: a topology (flock Graph, networkx
   graph or square numpy array), the right node count, weights finite and >= 0;
2. every rank contributes a record ``[rejected, nodes, edges, weighted,
   fingerprint]`` to one allgather, the fingerprint being a 64-bit BLAKE2b hash
   of the graph's topology file (every edge and weight, bit for bit);
3. a rank that rejected its argument raises FlockInvalidArgumentError, the
   others FlockAbortedError naming it; records that differ raise
   FlockMismatchError on every rank. Then nothing changed.
4. Otherwise every rank stores the graph, with ``is_weighted`` as its weighted flag.

``load_topology()`` / ``load_machine_topology()`` return, as Bluefog does, a
``networkx.DiGraph`` equal to what was set: a copy of the DiGraph given (its
class, attributes and weights as they were), or the conversion of a flock Graph,
undirected graph or matrix. Editing it changes nothing until it is set again.
Without networkx installed they return flock Graphs. flock's own Graph of the
topology in force: ``flock.topology.as_graph(load_topology())``.
"""

import hashlib
import sys
import warnings

import numpy as np

from flock._core_loader import core
from flock._public import publish
from flock import topology_util
from flock._agreement import allgather_rows
from flock.errors import FlockAbortedError, FlockInvalidArgumentError, FlockMismatchError
from flock.topology import ExponentialGraph, Graph, as_graph

# kind ("rank" / "machine") -> (JSON of the graph installed, what the user gave as a
# networkx DiGraph): load_*() returns the latter while the former is still in force.
_given = {}


def set_topology(topology=None, is_weighted=False):
    """Sets the rank topology on every rank (collective); returns True.

    ``topology=None`` means ``ExponentialGraph(size())``. ``is_weighted=True``
    makes neighbor ops use the graph's weights; False, uniform weights
    ``1/(in-degree + 1)``.
    """
    size = core.size()
    if topology is None:
        topology = ExponentialGraph(size)
    graph, error = _prepare("set_topology", topology, is_weighted, size, "size()")
    kept = _kept_for_windows("set_topology", "rank", graph)
    if kept is not None:
        return kept
    _agree("set_topology", graph, error)
    core.install_topology(graph._g)
    _remember("rank", graph, topology)
    return True


def load_topology():
    """The rank topology as a networkx DiGraph equal to what was set (a copy), or None."""
    return _load("rank", core.topology_graph())


def is_topo_weighted():
    """Whether neighbor ops use the rank topology's weights (set_topology's is_weighted)."""
    graph = core.topology_graph()
    return graph is not None and graph.is_weighted()


def in_neighbor_ranks():
    """Ranks that send to this rank in the rank topology, without itself, sorted."""
    return core.in_neighbor_ranks()


def out_neighbor_ranks():
    """Ranks this rank sends to in the rank topology, without itself, sorted."""
    return core.out_neighbor_ranks()


def set_machine_topology(topology, is_weighted=False):
    """Sets the machine topology (``machine_size()`` nodes) on every rank (collective); True.

    Needs a homogeneous layout (every machine has local_size() ranks).
    """
    machines = core.machine_size()
    if topology is None:
        graph, error = None, "set_machine_topology: a machine topology is required, got None"
    elif not core.is_homogeneous():
        graph, error = None, ("set_machine_topology: machine topologies need every machine to "
                              "have the same number of ranks (is_homogeneous() is False)")
    else:
        graph, error = _prepare("set_machine_topology", topology, is_weighted, machines,
                                "machine_size()")
    kept = _kept_for_windows("set_machine_topology", "machine", graph)
    if kept is not None:
        return kept
    _agree("set_machine_topology", graph, error)
    core.install_machine_topology(graph._g)
    _remember("machine", graph, topology)
    return True


def load_machine_topology():
    """The machine topology as a networkx DiGraph equal to what was set (a copy), or None."""
    return _load("machine", core.machine_topology_graph())


def _kept_for_windows(what, kind, graph):
    """While windows exist (their slots follow the topology of their creation) the
    topology stays: True if ``graph`` is the one in force, else False with a warning
    (Bluefog's behaviour); None when no window exists. Windows are created and freed
    on every rank alike, so every rank answers the same without talking."""
    names = core.win_names()
    if not names:
        return None
    installed = _given.get(kind, (None, None))[0]
    if graph is not None and installed == core.topology.to_json_string(graph._g):
        return True
    warnings.warn("{} kept the {} topology in force: windows {} exist (win_free them first)"
                  .format(what, kind, ", ".join(repr(n) for n in names)), stacklevel=3)
    return False


def _remember(kind, graph, given):
    nx = sys.modules.get("networkx")
    kept = given.copy() if nx is not None and isinstance(given, nx.DiGraph) else None
    _given[kind] = (core.topology.to_json_string(graph._g), kept)


def _load(kind, core_graph):
    if core_graph is None:
        return None
    graph = Graph._wrap(core_graph)
    installed, given = _given.get(kind, (None, None))
    if given is not None and installed == core.topology.to_json_string(core_graph):
        return given.copy()
    return topology_util.as_networkx(graph)


def is_machine_topo_weighted():
    graph = core.machine_topology_graph()
    return graph is not None and graph.is_weighted()


def in_neighbor_machine_ranks():
    """Machines sending to this rank's machine, without it, sorted ([] when unset)."""
    return core.in_neighbor_machine_ranks()


def out_neighbor_machine_ranks():
    """Machines this rank's machine sends to, without it, sorted ([] when unset)."""
    return core.out_neighbor_machine_ranks()


def set_initial_topology(topology_fn, is_weighted):
    """init()'s part: topology_fn(size()) or ExponentialGraph(size())."""
    try:
        topology = topology_fn(core.size()) if topology_fn is not None else None
    except Exception as error:  # still take part in the agreement: the others must not wait
        try:
            _agree("set_topology", None, "init: topology_fn({}) raised {}: {}".format(
                core.size(), type(error).__name__, error))
        except FlockInvalidArgumentError as flock_error:
            raise flock_error from error
    set_topology(topology, is_weighted)


def _prepare(what, topology, is_weighted, nodes, size_name):
    """(a private copy of the graph with the weighted flag set, None) or (None, error)."""
    try:
        graph = as_graph(topology).copy()
    except Exception as error:  # any failure must reach the agreement, or the others wait
        return None, "{}: {}".format(what, error)
    if graph.number_of_nodes() != nodes:
        return None, "{}: the topology has {} nodes but {} is {}".format(
            what, graph.number_of_nodes(), size_name, nodes)
    graph.set_weighted(bool(is_weighted))
    return graph, None


def _record(graph):
    if graph is None:
        return [1, 0, 0, 0, 0]
    text = core.topology.to_json_string(graph._g).encode()
    fingerprint = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little",
                                 signed=True)
    return [0, graph.number_of_nodes(), graph.number_of_edges(), int(graph.is_weighted()),
            fingerprint]


def _agree(what, graph, error):
    """Raises on every rank unless every rank passed the same valid graph."""
    mine = np.array([_record(graph)], dtype=np.int64)
    table = allgather_rows(mine, "flock." + what)
    if error is not None:
        raise FlockInvalidArgumentError(error)
    rejected = np.flatnonzero(table[:, 0]).tolist()
    if rejected:
        raise FlockAbortedError("{} was cancelled because {} rejected the topology (see the "
                                "error raised there)".format(what, _ranks(rejected)))
    groups = {}
    for rank, row in enumerate(table.tolist()):
        groups.setdefault(tuple(row[1:]), []).append(rank)
    if len(groups) > 1:
        described = "; ".join("{} {} {}".format(_ranks(ranks), "has" if len(ranks) == 1 else "have",
                                                _describe(key)) for key, ranks in groups.items())
        raise FlockMismatchError("{}: ranks disagree on the topology: {}".format(what, described))


def _ranks(ranks):
    if len(ranks) == 1:
        return "rank {}".format(ranks[0])
    return "ranks " + ", ".join(str(r) for r in ranks)


def _describe(key):
    nodes, edges, weighted, fingerprint = key
    return "{} nodes, {} edges, {} (fingerprint {:016x})".format(
        nodes, edges, "weighted" if weighted else "unweighted", fingerprint & (2 ** 64 - 1))


publish(globals(), [
    "set_topology", "load_topology", "is_topo_weighted", "in_neighbor_ranks", "out_neighbor_ranks",
    "set_machine_topology", "load_machine_topology", "is_machine_topo_weighted",
    "in_neighbor_machine_ranks", "out_neighbor_machine_ranks"])
