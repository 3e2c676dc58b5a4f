"""The job's topology on every rank: default, set_topology with each generator and with
networkx graphs, neighbour lists, agreement between ranks (mismatches raise on
every rank), bad topologies, the machine topology, and the Infer* helpers.

Every test makes the same collective calls on every rank and passes at any size;
a fixture puts the default topology back after each test.
"""

import networkx as nx
import numpy as np
import pytest

import flock
import flock.numpy as fnp
import flock.torch as bf
from conftest import needs_ranks
from flock import topology as tu

GENERATORS = {
    "ExponentialTwoGraph": tu.ExponentialTwoGraph,
    "ExponentialGraph3": lambda n: tu.ExponentialGraph(n, base=3),
    "SymmetricExponentialGraph": tu.SymmetricExponentialGraph,
    "MeshGrid2DGraph": tu.MeshGrid2DGraph,
    "StarGraph": tu.StarGraph,
    "RingGraph0": tu.RingGraph,
    "RingGraph1": lambda n: tu.RingGraph(n, connect_style=1),
    "RingGraph2": lambda n: tu.RingGraph(n, connect_style=2),
    "FullyConnectedGraph": tu.FullyConnectedGraph,
}


@pytest.fixture(autouse=True)
def default_topology_afterwards():
    yield
    bf.set_topology(tu.ExponentialGraph(bf.size()))


def expected_neighbours(w, rank):
    n = len(w)
    return ([j for j in range(n) if j != rank and w[j, rank] > 0],
            [j for j in range(n) if j != rank and w[rank, j] > 0])


def test_init_sets_exponential_graph_and_topology_fn(rank, size):
    bf.shutdown()
    bf.init()
    assert tu.IsTopologyEquivalent(bf.load_topology(), tu.ExponentialGraph(size))
    assert bf.is_topo_weighted() is False
    assert bf.load_machine_topology() is None and bf.in_neighbor_machine_ranks() == []
    bf.shutdown()
    bf.init(topology_fn=tu.RingGraph, is_weighted=True)
    assert tu.IsTopologyEquivalent(bf.load_topology(), tu.RingGraph(size))
    assert bf.is_topo_weighted() is True


@needs_ranks(2)
def test_topology_fn_failing_on_one_rank_fails_init_everywhere(rank, size):
    def topology_fn(n):
        if rank == 0:
            raise RuntimeError("no topology here")
        return tu.RingGraph(n)

    bf.shutdown()
    expected = flock.FlockInvalidArgumentError if rank == 0 else flock.FlockAbortedError
    with pytest.raises(expected, match="no topology here" if rank == 0 else "rank 0"):
        bf.init(topology_fn=topology_fn)
    assert bf.is_initialized() and bf.load_topology() is None and bf.in_neighbor_ranks() == []


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_set_topology_with_each_generator(name, rank, size):
    graph = GENERATORS[name](size)
    assert bf.set_topology(graph) is True
    assert tu.IsTopologyEquivalent(bf.load_topology(), graph)
    ins, outs = expected_neighbours(graph.to_numpy(), rank)
    assert bf.in_neighbor_ranks() == ins and bf.out_neighbor_ranks() == outs
    assert bf.is_topo_weighted() is False


def test_set_topology_with_networkx_and_numpy(rank, size):
    w = tu.RingGraph(size, connect_style=2).to_numpy()
    assert bf.set_topology(nx.from_numpy_array(w, create_using=nx.DiGraph), is_weighted=True)
    assert bf.is_topo_weighted() and tu.IsTopologyEquivalent(bf.load_topology(), w)
    assert bf.in_neighbor_ranks() == expected_neighbours(w, rank)[0]
    loaded = bf.load_topology()
    assert isinstance(loaded, nx.DiGraph) and loaded.number_of_nodes() == size
    assert fnp.set_topology(w) and flock.out_neighbor_ranks() == expected_neighbours(w, rank)[1]
    self_weight, recv = tu.GetRecvWeights(bf.load_topology(), rank)
    assert self_weight == pytest.approx(w[rank, rank])


def test_set_topology_none_is_the_default(size):
    bf.set_topology(tu.RingGraph(size))
    assert bf.set_topology(None)
    assert tu.IsTopologyEquivalent(bf.load_topology(), tu.ExponentialGraph(size))


def test_loaded_topology_is_a_copy(size):
    loaded = bf.load_topology()
    loaded.add_edge(0, 0, weight=0.123)
    assert bf.load_topology()[0][0]["weight"] != 0.123


@needs_ranks(2)
def test_different_topologies_raise_mismatch_on_every_rank(rank, size):
    before = bf.load_topology()
    self_loops = tu.Graph(size)
    for i in range(size):
        self_loops.add_edge(i, i)
    mine = self_loops if rank == size - 1 else tu.ExponentialGraph(size)
    with pytest.raises(flock.FlockMismatchError, match="ranks disagree on the topology"):
        bf.set_topology(mine)
    with pytest.raises(flock.FlockMismatchError, match="unweighted"):
        bf.set_topology(tu.RingGraph(size), is_weighted=(rank == 0))
    assert tu.IsTopologyEquivalent(bf.load_topology(), before)


@pytest.mark.parametrize("bad", ["wrong size", "negative weight", "node out of range",
                                 "not a topology"])
def test_bad_topologies_raise_on_every_rank(bad, size):
    topology = {
        "wrong size": tu.RingGraph(size + 1),
        "negative weight": -np.eye(size),
        "node out of range": nx.DiGraph([(0, size)]) if size > 1 else nx.DiGraph([(0, 1)]),
        "not a topology": "ExponentialGraph",
    }[bad]
    with pytest.raises(flock.FlockInvalidArgumentError, match="set_topology"):
        bf.set_topology(topology)
    assert tu.IsTopologyEquivalent(bf.load_topology(), tu.ExponentialGraph(size))


@needs_ranks(2)
def test_one_rank_with_a_bad_topology_cancels_the_others(rank, size):
    mine = tu.RingGraph(size + 1) if rank == 1 else tu.RingGraph(size)
    expected = flock.FlockInvalidArgumentError if rank == 1 else flock.FlockAbortedError
    with pytest.raises(expected, match="set_topology"):
        bf.set_topology(mine)


def test_machine_topology(rank, size):
    machines = bf.machine_size()
    if not bf.is_homogeneous():
        with pytest.raises(flock.FlockInvalidArgumentError, match="homogeneous"):
            bf.set_machine_topology(tu.RingGraph(machines))
        return
    graph = tu.RingGraph(machines, connect_style=2)
    assert bf.set_machine_topology(graph.to_networkx(), is_weighted=True) is True
    assert tu.IsTopologyEquivalent(bf.load_machine_topology(), graph)
    ins, outs = expected_neighbours(graph.to_numpy(), bf.machine_rank())
    assert bf.in_neighbor_machine_ranks() == ins and bf.out_neighbor_machine_ranks() == outs
    assert bf.is_machine_topo_weighted()
    with pytest.raises(flock.FlockInvalidArgumentError, match="machine_size"):
        bf.set_machine_topology(tu.RingGraph(machines + 1))
    with pytest.raises(flock.FlockInvalidArgumentError, match="required"):
        bf.set_machine_topology(None)
    assert tu.IsTopologyEquivalent(bf.load_machine_topology(), graph)


def test_infer_sources_and_destinations(rank, size):
    dst = [(rank + 1) % size] if size > 1 else []
    src = [(rank - 1) % size] if size > 1 else []
    assert bf.InferSourceFromDestinationRanks(dst) == src
    assert bf.InferDestinationFromSourceRanks(src) == dst
    sources, w = bf.InferSourceFromDestinationRanks(dst, construct_adjacency_matrix=True)
    np.testing.assert_allclose(w, tu.RingGraph(size, connect_style=2).to_numpy())
    _, w = bf.InferDestinationFromSourceRanks(src, construct_adjacency_matrix=True)
    np.testing.assert_allclose(w, tu.RingGraph(size, connect_style=2).to_numpy())


def test_infer_matches_the_one_peer_schedule(rank, size):
    steps = tu.GetDynamicOnePeerSendRecvRanks(tu.StarGraph(size), rank)
    for _ in range(3):
        send, recv = next(steps)
        assert bf.InferSourceFromDestinationRanks(send) == recv
        assert bf.InferDestinationFromSourceRanks(recv) == send


@pytest.mark.parametrize("bad", ["self", "out of range", "duplicate"])
def test_infer_with_invalid_lists_raises_on_every_rank(bad, rank, size):
    ranks = {"self": [rank], "out of range": [size], "duplicate": [(rank + 1) % size] * 2}[bad]
    with pytest.raises(flock.FlockInvalidArgumentError, match="dst_ranks"):
        bf.InferSourceFromDestinationRanks(ranks)


@needs_ranks(2)
def test_infer_with_one_invalid_list_cancels_the_others(rank, size):
    ranks = [rank] if rank == 0 else []
    expected = flock.FlockInvalidArgumentError if rank == 0 else flock.FlockAbortedError
    with pytest.raises(expected, match="InferDestinationFromSourceRanks"):
        bf.InferDestinationFromSourceRanks(ranks)
