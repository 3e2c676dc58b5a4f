"""flock.topology_util (and the same names under flock.torch): Bluefog's topology_util
with networkx graphs, against the numpy definitions of topology_reference.py.

A Bluefog program builds its graphs with nx.from_numpy_array(W, create_using=DiGraph)
and reads them back with networkx; these tests build that graph from the reference W
and require flock's to be the same graph, edge for edge and in the same order.
"""

import networkx as nx
import numpy as np
import pytest

import flock
import flock.torch as bf
import topology_reference as ref
from flock import topology as native
from flock import topology_util as tu

SIZES = [1, 2, 3, 4, 5, 8, 12]

GENERATORS = [
    ("ExponentialTwoGraph", lambda n: tu.ExponentialTwoGraph(n), lambda n: ref.exponential(n, 2)),
    ("ExponentialGraph", lambda n: tu.ExponentialGraph(n), lambda n: ref.exponential(n, 2)),
    ("ExponentialGraph3", lambda n: tu.ExponentialGraph(n, base=3),
     lambda n: ref.exponential(n, 3)),
    ("SymmetricExponentialGraph", lambda n: tu.SymmetricExponentialGraph(n),
     lambda n: ref.symmetric_exponential(n, 4)),
    ("MeshGrid2DGraph", lambda n: tu.MeshGrid2DGraph(n), lambda n: ref.mesh(n)),
    ("StarGraph", lambda n: tu.StarGraph(n, center_rank=n - 1), lambda n: ref.star(n, n - 1)),
    ("RingGraph1", lambda n: tu.RingGraph(n, connect_style=1), lambda n: ref.ring(n, 1)),
    ("FullyConnectedGraph", lambda n: tu.FullyConnectedGraph(n), ref.fully_connected),
]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,make,reference", GENERATORS, ids=[g[0] for g in GENERATORS])
def test_generators_return_bluefogs_digraph(name, make, reference, n):
    graph = make(n)
    w = reference(n)
    bluefogs = nx.from_numpy_array(w, create_using=nx.DiGraph)
    assert isinstance(graph, nx.DiGraph)
    np.testing.assert_allclose(nx.to_numpy_array(graph), w, rtol=0, atol=1e-15)
    assert list(graph.nodes) == list(bluefogs.nodes)
    assert [(u, v) for u, v in graph.edges] == [(u, v) for u, v in bluefogs.edges]
    for u, v, data in graph.edges(data=True):
        assert data["weight"] == pytest.approx(w[u, v], abs=1e-15)


def test_flock_torch_exports_the_networkx_generators():
    assert bf.ExponentialGraph is tu.ExponentialGraph and flock.RingGraph is tu.RingGraph
    assert isinstance(bf.MeshGrid2DGraph(6), nx.DiGraph)
    assert isinstance(native.ExponentialGraph(6), native.Graph)  # flock's own graph stays


@pytest.mark.parametrize("weighted", [True, False])
def test_native_and_networkx_convert_both_ways_without_loss(weighted):
    graph = native.MeshGrid2DGraph(6)
    graph.set_weighted(weighted)
    there = graph.to_networkx()
    back = native.Graph.from_networkx(there)
    assert back.is_weighted() == weighted
    assert back.to_numpy().tolist() == graph.to_numpy().tolist()
    again = back.to_networkx()
    assert list(again.edges(data="weight")) == list(there.edges(data="weight"))


def test_helpers_take_networkx_native_and_numpy():
    nxg, w = tu.StarGraph(5), ref.star(5)
    assert tu.IsTopologyEquivalent(nxg, native.StarGraph(5))
    assert tu.IsTopologyEquivalent(nxg, w) and not tu.IsTopologyEquivalent(nxg, ref.ring(5))
    assert not tu.IsTopologyEquivalent(nxg, None) and not tu.IsTopologyEquivalent(None, nxg)
    self_weight, recv = tu.GetRecvWeights(nxg, 0)
    assert self_weight == pytest.approx(w[0, 0])
    assert recv == pytest.approx({j: w[j, 0] for j in range(1, 5)})
    assert tu.GetSendWeights(nxg, 2) == (pytest.approx(w[2, 2]), pytest.approx({0: w[2, 0]}))
    assert tu.IsRegularGraph(tu.RingGraph(6)) and not tu.IsRegularGraph(nxg)
    send, recv = next(tu.GetDynamicOnePeerSendRecvRanks(tu.ExponentialGraph(4), 0))
    assert send == [1] and recv == [3]


@pytest.mark.parametrize("x,base,expected", [
    (1, 2, True), (2, 2, True), (8, 2, True), (6, 2, False), (243, 3, True), (3 ** 20, 3, True),
    (3 ** 20 + 1, 3, False), (512, 4, False), (4096, 4, True), (2.0, 2, True), (2.5, 2, False)])
def test_is_power_of(x, base, expected):
    assert tu.isPowerOf(x, base) is expected


@pytest.mark.parametrize("x,base", [(0, 2), (-4, 2), (4, 1), (4, 2.0), (4, True), ("4", 2)])
def test_is_power_of_refuses_what_bluefog_asserts_against(x, base):
    with pytest.raises(flock.FlockInvalidArgumentError, match="isPowerOf"):
        tu.isPowerOf(x, base)
