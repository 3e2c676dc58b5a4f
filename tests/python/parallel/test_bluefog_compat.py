"""What a Bluefog program relies on and flock must do the same way (issue: drop-in).

- init() sets the topology on every call (the default graph, or topology_fn's);
- load_topology() / load_machine_topology() return networkx DiGraphs equal to what
  was set;
- Bluefog's positional order of the allreduce forms, with flock's op= keyword-only;
- rank lists and weight dicts in every form: tuples, ranges, numpy arrays and
  scalars, tensors; floats refused as ranks on every rank involved;
- neighbor_allgather's enable_topo_check;
- BLUEFOG_NODES_PER_MACHINE: an alias of FLOCK_LOCAL_SIZE that loses to it, and a
  value that does not divide the world size is an error on every rank.

Results are checked against the dense mixing-matrix reference (neighbor_reference).
"""

import networkx as nx
import numpy as np
import pytest
import torch

import flock.torch as bf
import neighbor_reference as nr
from conftest import needs_ranks
from emulated_machines import fake_machines, machine_settings
from flock import topology as native


@pytest.fixture(autouse=True)
def default_topology_afterwards():
    yield
    bf.set_topology(native.ExponentialGraph(bf.size()))


def _x(rank, width=3):
    return torch.arange(width, dtype=torch.float64) + 10.0 * rank


def _inputs(size, width=3):
    return [_x(r, width).numpy() for r in range(size)]


def _assert_static_average(got, w, rank, size, width=3):
    np.testing.assert_allclose(got.numpy(), nr.mixed(w, _inputs(size, width), rank), rtol=1e-12)


# ---- init() and the topology


def test_a_second_init_goes_back_to_the_default_topology(rank, size):
    assert bf.set_topology(native.RingGraph(size, connect_style=2), is_weighted=True)
    bf.init()  # no shutdown: Bluefog's tests call init() in every setUp
    expo = native.ExponentialGraph(size)
    assert bf.IsTopologyEquivalent(bf.load_topology(), expo) and not bf.is_topo_weighted()
    assert bf.in_neighbor_ranks() == nr.in_neighbors(expo, rank)
    got = bf.neighbor_allreduce(_x(rank), name="reinit.default")
    _assert_static_average(got, nr.static_mixing(expo, weighted=False), rank, size)


def test_init_with_topology_fn_replaces_the_topology_in_force(rank, size):
    bf.init(topology_fn=lambda n: bf.StarGraph(n), is_weighted=True)
    star = native.StarGraph(size)
    assert bf.IsTopologyEquivalent(bf.load_topology(), star) and bf.is_topo_weighted()
    got = bf.neighbor_allreduce(_x(rank), name="reinit.star")
    _assert_static_average(got, nr.static_mixing(star, weighted=True), rank, size)
    bf.init()
    assert bf.IsTopologyEquivalent(bf.load_topology(), native.ExponentialGraph(size))


def test_load_topology_is_a_digraph_equal_to_what_was_set(size):
    class Tagged(nx.DiGraph):
        pass

    given = Tagged(nx.from_numpy_array(native.RingGraph(size).to_numpy(), create_using=nx.DiGraph))
    given.graph["note"] = "mine"
    assert bf.set_topology(given)
    loaded = bf.load_topology()
    assert type(loaded) is Tagged and loaded is not given and loaded.graph["note"] == "mine"
    assert list(loaded.edges(data=True)) == list(given.edges(data=True))
    np.testing.assert_array_equal(nx.to_numpy_array(loaded), native.RingGraph(size).to_numpy())
    loaded.remove_edges_from(list(loaded.edges))  # a copy: the topology in force is untouched
    assert bf.load_topology().number_of_edges() == given.number_of_edges()


@pytest.mark.parametrize("form", ["flock Graph", "numpy", "undirected", "default"])
def test_load_topology_converts_other_forms_to_a_digraph(form, size):
    w = native.RingGraph(size).to_numpy()
    topology = {"flock Graph": native.RingGraph(size), "numpy": w,
                "undirected": nx.from_numpy_array(w), "default": None}[form]
    assert bf.set_topology(topology)
    loaded = bf.load_topology()
    assert isinstance(loaded, nx.DiGraph) and sorted(loaded.nodes) == list(range(size))
    expected = native.ExponentialGraph(size).to_numpy() if form == "default" else w
    np.testing.assert_allclose(nx.to_numpy_array(loaded, nodelist=range(size)), expected)
    assert native.Graph.from_networkx(loaded).to_numpy().tolist() == expected.tolist()


def test_generators_under_flock_torch_are_digraphs(size):
    for graph in (bf.ExponentialGraph(size), bf.RingGraph(size), bf.MeshGrid2DGraph(size)):
        assert isinstance(graph, nx.DiGraph)
        assert bf.set_topology(graph)
        assert bf.IsTopologyEquivalent(bf.load_topology(), graph)
        assert list(bf.load_topology().edges(data=True)) == list(graph.edges(data=True))


def test_load_machine_topology_is_a_digraph(size):
    machines = bf.machine_size()
    assert bf.set_machine_topology(bf.RingGraph(machines))
    loaded = bf.load_machine_topology()
    assert isinstance(loaded, nx.DiGraph)
    np.testing.assert_allclose(nx.to_numpy_array(loaded), native.RingGraph(machines).to_numpy())


# ---- argument forms


def test_allreduce_takes_bluefogs_positional_order(rank, size):
    x = torch.full((2,), float(rank))
    total = sum(range(size))
    assert torch.equal(bf.allreduce(x, False, False, "pos.sum"), torch.full((2,), float(total)))
    local = bf.allreduce(x, True, True, "pos.local")  # average within the machine
    first = rank - bf.local_rank()
    local_mean = (first + first + bf.local_size() - 1) / 2.0
    assert torch.allclose(local, torch.full((2,), local_mean))
    handle = bf.allreduce_nonblocking(x, False, False, "pos.nb")
    assert torch.equal(bf.synchronize(handle), torch.full((2,), float(total)))
    y = x.clone()
    bf.synchronize(bf.allreduce_nonblocking_(y, False, False, "pos.nb_"))
    assert torch.equal(y, torch.full((2,), float(total)))
    assert bf.allreduce_(x.clone(), False, False, "pos.inplace")[0].item() == total
    with pytest.raises(TypeError):
        bf.allreduce(x, None, False, "pos.op", "max")  # op is keyword-only


RANK_LIST_FORMS = {
    "list": list, "tuple": tuple, "numpy": np.array,
    "numpy int32": lambda r: np.array(r, dtype=np.int32),
    "tensor": lambda r: torch.tensor(r, dtype=torch.int64),
    "numpy scalars": lambda r: [np.int64(x) for x in r],
}


@needs_ranks(2)
@pytest.mark.parametrize("form", sorted(RANK_LIST_FORMS))
def test_rank_lists_in_every_form(form, rank, size):
    as_form = RANK_LIST_FORMS[form]
    after, before = (rank + 1) % size, (rank - 1) % size
    gathered = bf.neighbor_allgather(_x(rank).reshape(1, 3), src_ranks=as_form([before]),
                                     dst_ranks=as_form([after]), name="form.ag." + form)
    np.testing.assert_array_equal(gathered.numpy(), _x(before).reshape(1, 3).numpy())
    got = bf.neighbor_allreduce(_x(rank), self_weight=np.float32(0.5),
                                src_weights={np.int64(before): np.float64(0.5)},
                                dst_weights=as_form([after]), name="form.nar." + form)
    np.testing.assert_allclose(got.numpy(), 0.5 * _x(rank).numpy() + 0.5 * _x(before).numpy())
    assert bf.InferSourceFromDestinationRanks(as_form([after])) == [before]
    root = bf.broadcast(_x(rank), root_rank=np.int64(size - 1), name="form.bc." + form)
    assert torch.equal(root, _x(size - 1))


@needs_ranks(2)
def test_pair_gossip_takes_a_numpy_rank(rank, size):
    if rank >= size - size % 2:
        return  # an odd last rank has no pair
    partner = rank ^ 1
    got = bf.pair_gossip(_x(rank), np.int32(partner), name="form.pair")
    np.testing.assert_allclose(got.numpy(), 0.5 * (_x(rank) + _x(partner)).numpy())


@needs_ranks(2)
def test_a_float_rank_fails_the_call_on_every_rank_involved(rank, size):
    after, before = (rank + 1) % size, (rank - 1) % size
    bad = rank == 0
    dst = [float(after)] if bad else [after]
    expected = bf.FlockInvalidArgumentError if bad else bf.FlockError
    if bad or after == 0 or before == 0:  # rank 0 and its peers
        with pytest.raises(expected, match="dst_weights must" if bad else "rank 0"):
            bf.neighbor_allreduce(_x(rank), self_weight=0.5, src_weights={before: 0.5},
                                  dst_weights=dst, name="form.float")
    else:
        bf.neighbor_allreduce(_x(rank), self_weight=0.5, src_weights={before: 0.5},
                              dst_weights=dst, name="form.float")
    with pytest.raises(bf.FlockError, match="root_rank must be an integer" if bad else "rank 0"):
        bf.broadcast(_x(rank), root_rank=1.0 if bad else 1, name="form.float.root")
    assert torch.equal(bf.broadcast(_x(rank), 0, name="form.after"), _x(0))


@needs_ranks(2)
def test_neighbor_allgather_topology_check(rank, size):
    # Rank 0 expects rank 1, which sends to nobody: the check fails rank 0 instead of
    # leaving it waiting. Rank 1 may finish before rank 0's notice arrives.
    x = _x(rank).reshape(1, 3)
    if rank == 0:
        with pytest.raises(bf.FlockMismatchError):
            bf.neighbor_allgather(x, src_ranks=[1], dst_ranks=[], enable_topo_check=True,
                                  name="check.ag")
    else:
        try:
            got = bf.neighbor_allgather(x, src_ranks=[], dst_ranks=[], enable_topo_check=True,
                                        name="check.ag")
            assert got.shape == (0, 3)
        except bf.FlockMismatchError:
            assert rank == 1
    handle = bf.neighbor_allgather_nonblocking(x, enable_topo_check=False, name="check.ag.off")
    expected = nr.gather(_inputs(size), bf.in_neighbor_ranks(), (3,))
    np.testing.assert_array_equal(bf.synchronize(handle).numpy(), expected.reshape(-1, 3))


def test_unified_window_model_is_reported():
    # OpenMPI's one-sided memory over shared memory (every rank of this job) is unified.
    assert bf.unified_mpi_window_model_supported() is True


# ---- BLUEFOG_NODES_PER_MACHINE


@pytest.mark.skipif(bf.size() % 2 != 0 or bf.size() < 4, reason="needs an even size >= 4")
def test_flocks_machine_size_wins_over_bluefogs(rank, size):
    with machine_settings(FLOCK_LOCAL_SIZE=2, BLUEFOG_NODES_PER_MACHINE=size):
        bf.init()
        assert bf.local_size() == 2 and bf.machine_size() == size // 2
    with fake_machines(2, "BLUEFOG_NODES_PER_MACHINE"):
        x = torch.full((2,), float(rank))
        local_mean = (rank - rank % 2) + 0.5
        got = bf.allreduce(x, True, True, "bf.nodes.local")
        assert torch.allclose(got, torch.full((2,), local_mean))


@needs_ranks(2)
@pytest.mark.parametrize("variable", ["FLOCK_LOCAL_SIZE", "BLUEFOG_NODES_PER_MACHINE"])
def test_a_machine_size_that_does_not_divide_the_world_is_an_error(variable, size):
    with machine_settings(**{variable: size + 1}):
        with pytest.raises(bf.FlockInvalidArgumentError,
                           match="{}={} does not divide the world size {}".format(
                               variable, size + 1, size)):
            bf.init()
        assert not bf.is_initialized()
