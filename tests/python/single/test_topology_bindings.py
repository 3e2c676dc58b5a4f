"""flock.topology without init(): every generator against the definitions
(topology_reference.py computes them in numpy), Bluefog's helpers, networkx and
numpy interop both ways, the networkx-style reading methods, files, and errors.
Dynamic schedules are in test_topology_dynamic.py.
"""

import pickle
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest

import flock
import topology_reference as ref
from flock import topology as tu

SIZES = [1, 2, 3, 4, 5, 7, 8, 12, 13, 16]

GENERATORS = [
    ("ExponentialTwoGraph", lambda n: tu.ExponentialTwoGraph(n), lambda n: ref.exponential(n, 2)),
    ("ExponentialGraph", lambda n: tu.ExponentialGraph(n), lambda n: ref.exponential(n, 2)),
    ("ExponentialGraph3", lambda n: tu.ExponentialGraph(n, base=3),
     lambda n: ref.exponential(n, 3)),
    ("SymmetricExponentialGraph", lambda n: tu.SymmetricExponentialGraph(n),
     lambda n: ref.symmetric_exponential(n, 4)),
    ("SymmetricExponentialGraph2", lambda n: tu.SymmetricExponentialGraph(n, base=2),
     lambda n: ref.symmetric_exponential(n, 2)),
    ("MeshGrid2DGraph", lambda n: tu.MeshGrid2DGraph(n), lambda n: ref.mesh(n)),
    ("StarGraph", lambda n: tu.StarGraph(n), lambda n: ref.star(n)),
    ("StarGraphLastCenter", lambda n: tu.StarGraph(n, center_rank=n - 1),
     lambda n: ref.star(n, n - 1)),
    ("RingGraph0", lambda n: tu.RingGraph(n), lambda n: ref.ring(n, 0)),
    ("RingGraph1", lambda n: tu.RingGraph(n, connect_style=1), lambda n: ref.ring(n, 1)),
    ("RingGraph2", lambda n: tu.RingGraph(n, connect_style=2), lambda n: ref.ring(n, 2)),
    ("FullyConnectedGraph", lambda n: tu.FullyConnectedGraph(n), ref.fully_connected),
]


def assert_matches(graph, expected):
    assert isinstance(graph, tu.Graph)
    n = len(expected)
    assert graph.number_of_nodes() == n
    np.testing.assert_allclose(graph.to_numpy(), expected, rtol=0, atol=1e-12)
    for i in range(n):
        for j in range(n):
            assert graph.has_edge(i, j) == (expected[i, j] > 0), (i, j)
        assert graph.in_neighbors(i) == [j for j in range(n) if j != i and expected[j, i] > 0]
        assert graph.out_neighbors(i) == [j for j in range(n) if j != i and expected[i, j] > 0]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,make,expect", GENERATORS, ids=[g[0] for g in GENERATORS])
def test_generator_matches_definition(name, make, expect, n):
    graph = make(n)
    assert_matches(graph, expect(n))
    assert graph.is_weighted()
    assert tu.is_doubly_stochastic(graph)
    # Bluefog builds its DiGraph from W with networkx: the same topology.
    bluefog_style = nx.from_numpy_array(expect(n), create_using=nx.DiGraph)
    assert tu.IsTopologyEquivalent(graph, bluefog_style)


def test_documented_small_cases():
    np.testing.assert_allclose(tu.ExponentialGraph(4).to_numpy()[0], [1 / 3, 1 / 3, 1 / 3, 0])
    assert tu.MeshGrid2DGraph(8).self_weight(0) == pytest.approx(5 / 12)
    assert tu.MeshGrid2DGraph(12, shape=(2, 6)).out_neighbors(0) == [1, 6]
    assert tu.DefaultMeshShape(13) == (1, 13)
    assert_matches(tu.MeshGrid2DGraph(12, shape=(3, 4)), ref.mesh(12, (3, 4)))
    assert_matches(tu.CirculantGraph(12, [1, 3, 11]), ref.circulant(12, [1, 3, 11]))


@pytest.mark.parametrize("make", [lambda: tu.ExponentialGraph(8), lambda: tu.MeshGrid2DGraph(6),
                                  lambda: tu.StarGraph(5, 2)])
def test_recv_and_send_weights(make):
    graph = make()
    w = graph.to_numpy()
    for r in range(len(w)):
        self_weight, recv = tu.GetRecvWeights(graph, r)
        assert self_weight == pytest.approx(w[r, r])
        assert recv == pytest.approx({j: w[j, r] for j in range(len(w)) if j != r and w[j, r] > 0})
        self_weight, send = tu.GetSendWeights(graph.to_networkx(), r)
        assert self_weight == pytest.approx(w[r, r])
        assert send == pytest.approx({j: w[r, j] for j in range(len(w)) if j != r and w[r, j] > 0})


def test_equivalence_and_regularity():
    assert tu.IsTopologyEquivalent(tu.ExponentialTwoGraph(8), tu.ExponentialGraph(8, 2))
    assert not tu.IsTopologyEquivalent(tu.RingGraph(8), tu.ExponentialGraph(8))
    assert not tu.IsTopologyEquivalent(tu.RingGraph(8), tu.RingGraph(9))
    assert not tu.IsTopologyEquivalent(tu.RingGraph(8), None)
    reweighted = tu.RingGraph(8).to_networkx()
    reweighted[0][1]["weight"] = 0.3
    assert not tu.IsTopologyEquivalent(tu.RingGraph(8), reweighted)
    assert tu.IsRegularGraph(tu.ExponentialGraph(8)) and tu.IsRegularGraph(tu.RingGraph(5))
    assert not tu.IsRegularGraph(tu.StarGraph(5)) and not tu.IsRegularGraph(tu.MeshGrid2DGraph(6))


def test_analysis():
    for n in (3, 5, 8):
        lam = max(abs(1 / 3 + 2 / 3 * np.cos(2 * np.pi * k / n)) for k in range(1, n))
        assert tu.spectral_gap(tu.RingGraph(n)) == pytest.approx(1 - lam)
        w = tu.RingGraph(n).to_numpy()
        assert tu.second_largest_eigenvalue_modulus(w) == pytest.approx(lam)
    assert tu.predicted_consensus_iterations(tu.FullyConnectedGraph(4), 1e-4) == 1
    assert tu.predicted_consensus_iterations(np.eye(3), 1e-4) is None
    assert tu.is_strongly_connected(tu.RingGraph(5, 2)) and not tu.is_strongly_connected(np.eye(2))
    assert tu.is_column_stochastic(np.array([[0.5, 1.0], [0.5, 0.0]]))
    assert not tu.is_row_stochastic(np.array([[0.5, 1.0], [0.5, 0.0]]))


def test_networkx_round_trip_keeps_edges_weights_and_flag():
    for graph in (tu.MeshGrid2DGraph(6), tu.StarGraph(4)):
        g = graph.to_networkx()
        assert isinstance(g, nx.DiGraph) and sorted(g.nodes) == list(range(len(graph)))
        np.testing.assert_allclose(nx.to_numpy_array(g, nodelist=range(len(graph))),
                                   graph.to_numpy())
        back = tu.Graph.from_networkx(g)
        assert tu.IsTopologyEquivalent(back, graph) and back.is_weighted()
    unweighted = tu.Graph(3)
    unweighted.add_edge(0, 1)
    assert not tu.Graph.from_networkx(unweighted.to_networkx()).is_weighted()


def test_networkx_graphs_without_weights_undirected_and_numpy_inputs():
    g = nx.DiGraph([(0, 1), (1, 2), (2, 0)])
    graph = tu.as_graph(g)
    assert not graph.is_weighted() and graph.weight(0, 1) == 1.0 and graph.number_of_edges() == 3
    undirected = tu.as_graph(nx.path_graph(3))
    assert undirected.out_neighbors(1) == [0, 2] and undirected.in_neighbors(1) == [0, 2]
    w = ref.ring(5)
    assert tu.IsTopologyEquivalent(w, tu.RingGraph(5)) and tu.as_graph(w).is_weighted()
    assert tu.GetRecvWeights(w, 0)[1] == pytest.approx({1: 1 / 3, 4: 1 / 3})
    assert tu.IsRegularGraph(nx.from_numpy_array(w, create_using=nx.DiGraph))


def test_networkx_style_reading_matches_networkx():
    graph = tu.StarGraph(5, 1)
    g = graph.to_networkx()
    assert graph.number_of_nodes() == len(graph) == g.number_of_nodes()
    assert graph.number_of_edges() == g.number_of_edges() == len(graph.edges)
    assert list(graph) == list(graph.nodes) == graph.nodes() == sorted(g.nodes)
    assert 4 in graph and 5 not in graph and "a" not in graph
    for i in graph:
        assert list(graph.predecessors(i)) == sorted(g.predecessors(i))
        assert list(graph.successors(i)) == list(graph.neighbors(i)) == sorted(g.successors(i))
        assert graph.in_degree(i) == g.in_degree(i) and graph.out_degree(i) == g.out_degree(i)
        assert graph.degree(i) == g.degree(i)
        assert graph.in_degree(i, weight="weight") == pytest.approx(g.in_degree(i, weight="weight"))
        assert graph[i] == dict(g[i])
    assert dict(graph.degree()) == dict(g.degree())
    assert sorted(graph.edges) == sorted(g.edges)
    assert sorted(graph.edges(data=True)) == sorted(g.edges(data=True))
    assert sorted(graph.edges(data="weight")) == sorted(g.edges(data="weight"))
    assert graph.edges(1) == sorted(g.edges(1)) and (1, 0) in graph.edges
    assert graph.edges[1, 0] == {"weight": pytest.approx(0.2)}
    assert graph.has_edge(1, 1) and not graph.has_edge(0, 2) and not graph.has_edge(0, 99)


def test_graph_building_copy_pickle_and_files(tmp_path):
    graph = tu.Graph(3, weighted=True)
    graph.add_edge(0, 1, 0.5)
    graph.set_self_weight(0, 0.5)
    copy = graph.copy()
    copy.remove_edge(0, 1)
    assert graph.has_edge(0, 1) and not copy.has_edge(0, 1)
    assert "3 nodes, 2 edges, weighted" in repr(graph)
    assert tu.IsTopologyEquivalent(pickle.loads(pickle.dumps(graph)), graph)
    tu.save_json(graph, tmp_path / "g.json")
    loaded = tu.load_json(tmp_path / "g.json")
    assert tu.IsTopologyEquivalent(loaded, graph) and loaded.is_weighted()
    assert tu.IsTopologyEquivalent(tu.from_json_string(tu.to_json_string(graph)), graph)


BAD_CALLS = [
    (lambda: tu.ExponentialGraph(0), "size"),
    (lambda: tu.RingGraph(-3), "size"),
    (lambda: tu.RingGraph(2.5), "size must be an integer"),
    (lambda: tu.RingGraph(True), "size must be an integer"),
    (lambda: tu.RingGraph(5, connect_style=3), "connect_style"),
    (lambda: tu.ExponentialGraph(8, base=1), "base"),
    (lambda: tu.StarGraph(4, center_rank=4), "out of range"),
    (lambda: tu.MeshGrid2DGraph(8, shape=(3, 3)), "8"),
    (lambda: tu.MeshGrid2DGraph(8, shape=4), "pair"),
    (lambda: tu.Graph(2).add_edge(0, 5), "add_edge(0, 5): node 5 is out of range [0, 2)"),
    (lambda: tu.Graph(2).add_edge(0, 1, -0.5), "negative weight"),
    (lambda: tu.Graph(2).remove_edge(0, 1), "no such edge"),
    (lambda: tu.as_graph("ring"), "must be a flock.topology.Graph"),
    (lambda: tu.as_graph([[1.0]]), "got list"),
    (lambda: tu.as_graph(np.ones((2, 3))), "square"),
    (lambda: tu.as_graph(np.array([[1.0, -1.0], [0.0, 1.0]])), "negative"),
    (lambda: tu.as_graph(nx.DiGraph([(0, 1), (1, 5)])), "found node 5"),
    (lambda: tu.as_graph(nx.DiGraph([("a", "b")])), "found node 'a'"),
    (lambda: tu.as_graph(nx.MultiDiGraph([(0, 1)])), "multigraph"),
    (lambda: tu.as_graph(_weighted_digraph(-1.0)), "weight -1.0"),
    (lambda: tu.as_graph(_weighted_digraph(float("nan"))), "finite"),
    (lambda: tu.GetRecvWeights(tu.RingGraph(4), 4), "out of range"),
    (lambda: tu.from_json_string("{not json"), "JSON"),
    (lambda: tu.load_json("/nonexistent/topology.json"), "nonexistent"),
    (lambda: tu.predicted_consensus_iterations(tu.RingGraph(4), 2.0), "eps"),
]


def _weighted_digraph(weight):
    g = nx.DiGraph()
    g.add_edge(0, 1, weight=weight)
    return g


@pytest.mark.parametrize("call,words", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_bad_arguments_raise_invalid_argument(call, words):
    with pytest.raises(flock.FlockInvalidArgumentError, match=None) as info:
        call()
    assert isinstance(info.value, ValueError)
    assert words in str(info.value), str(info.value)


def run_python(code, timeout=120):
    """Runs `code` in a fresh interpreter (MPI can start once per process)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def test_runtime_api_needs_init_and_init_sets_the_topology():
    result = run_python("""
        import flock, flock.topology as tu
        for call in (lambda: flock.set_topology(tu.RingGraph(1)), flock.load_topology,
                     flock.in_neighbor_ranks, flock.out_neighbor_machine_ranks,
                     lambda: tu.InferSourceFromDestinationRanks([])):
            try:
                call()
            except flock.FlockNotInitializedError:
                pass
            else:
                raise SystemExit("no error before init")
        flock.init(topology_fn=lambda n: tu.RingGraph(n, 2), is_weighted=True)
        assert flock.is_topo_weighted() and flock.load_topology()[0][0]["weight"] == 1.0
        flock.init()  # already initialized: back to the default graph, as Bluefog's init
        assert not flock.is_topo_weighted()
        flock.shutdown()
        flock.init()
        assert tu.IsTopologyEquivalent(flock.load_topology(), tu.ExponentialGraph(1))
        assert not flock.is_topo_weighted() and flock.load_machine_topology() is None
        flock.shutdown()
        print("ok")
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_consensus_plot_example_writes_a_png(tmp_path):
    import os
    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python",
                          "topology_consensus_plot.py")
    output = tmp_path / "consensus.png"
    result = subprocess.run([sys.executable, script, "--size", "8", "--iterations", "20",
                             "--output", str(output)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
