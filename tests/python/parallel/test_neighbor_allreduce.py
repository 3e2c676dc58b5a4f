"""neighbor_allreduce on the static topology, against the dense numpy reference
(neighbor_reference.py: rank i's result is column i of W applied to every rank's input).

Covered: every flock.topology generator, uniform (1/(indeg+1)) and weighted
(the graph's own weights), and an arbitrary positively weighted graph; the
floating dtypes at shapes 0-d, empty, 1 and 7, plus 10^6 elements in float32;
the in-place form (also on a strided view) and both nonblocking forms; explicit
self/src weights on the static topology, a subset of the in-neighbours (the
others weigh 0); an exact float64 sum (weights 1.0, values float32 cannot hold);
a job of one rank; flock.numpy arrays. Every call also checks that its input is
unchanged. A fixture puts the default topology back after each test.
"""

import zlib

import numpy as np
import pytest
import torch

import flock.numpy as fnp
import flock.torch as bf
import neighbor_reference as nr
from flock import topology as tu
from reference import FLOAT_DTYPES, rank_input, to_torch

GENERATORS = {
    "ExponentialGraph": tu.ExponentialGraph,
    "ExponentialTwoGraph": tu.ExponentialTwoGraph,
    "ExponentialGraph3": lambda n: tu.ExponentialGraph(n, base=3),
    "SymmetricExponentialGraph": tu.SymmetricExponentialGraph,
    "MeshGrid2DGraph": tu.MeshGrid2DGraph,
    "StarGraph": tu.StarGraph,
    "RingGraph0": tu.RingGraph,
    "RingGraph1": lambda n: tu.RingGraph(n, connect_style=1),
    "RingGraph2": lambda n: tu.RingGraph(n, connect_style=2),
    "FullyConnectedGraph": tu.FullyConnectedGraph,
    "CirculantGraph": lambda n: tu.CirculantGraph(n, [d for d in (1, 3) if d < n]),
}

SMALL_SHAPES = [(), (0,), (1,), (7,)]


@pytest.fixture(autouse=True)
def default_topology_afterwards():
    yield
    bf.set_topology(tu.ExponentialGraph(bf.size()))


def _seed(*key):
    return zlib.crc32(repr(key).encode())  # the same on every rank


def _tensor(values, dtype):
    # A copy: to_torch may share memory with the float64 reference inputs, which an
    # in-place op would then overwrite.
    return to_torch(values, dtype).clone()


def _inputs(seed, dtype, shape, size):
    """Every rank's input (float64 values exactly representable in dtype)."""
    return [rank_input(seed, r, dtype, shape) for r in range(size)]


def _check(result, tensor, before, w, inputs, rank, dtype, what):
    assert torch.equal(tensor, before), "{}: the input must not be modified".format(what)
    assert result.dtype == tensor.dtype and result.shape == tensor.shape, what
    nr.assert_weighted_close(result.to(torch.float64).numpy(), nr.mixed(w, inputs, rank),
                             nr.mixed_bound(w, inputs, rank), dtype, what)


@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_static_topology_of_each_generator(name, weighted, rank, size):
    graph = GENERATORS[name](size)
    assert bf.set_topology(graph, is_weighted=weighted)
    # The reference reads the graph the way the runtime does.
    assert bf.in_neighbor_ranks() == nr.in_neighbors(graph, rank)
    w = nr.static_mixing(graph, weighted)
    for dtype in ["float32", "float64"]:
        inputs = _inputs(_seed(name, weighted, dtype), dtype, (2, 3), size)
        tensor = _tensor(inputs[rank], dtype)
        before = tensor.clone()
        result = bf.neighbor_allreduce(tensor, name="gen.{}.{}.{}".format(name, weighted, dtype))
        _check(result, tensor, before, w, inputs, rank, dtype, "{} {}".format(name, dtype))


def test_arbitrary_positive_weights(rank, size):
    # Not stochastic, not symmetric: the topology's weights are used as they are.
    rng = np.random.default_rng(2024)
    w = rng.uniform(0.1, 2.0, size=(size, size)) * (rng.random((size, size)) < 0.6)
    np.fill_diagonal(w, rng.uniform(0.1, 2.0, size=size))
    assert bf.set_topology(w, is_weighted=True)
    inputs = _inputs(_seed("arbitrary"), "float64", (5,), size)
    tensor = _tensor(inputs[rank], "float64")
    before = tensor.clone()
    result = bf.neighbor_allreduce(tensor, name="arbitrary")
    _check(result, tensor, before, w, inputs, rank, "float64", "arbitrary weights")
    # The same graph unweighted: uniform over the same edges.
    assert bf.set_topology(w, is_weighted=False)
    result = bf.neighbor_allreduce(tensor, name="arbitrary.uniform")
    _check(result, tensor, before, nr.static_mixing(w, False), inputs, rank, "float64",
           "same edges, uniform")


@pytest.mark.parametrize("dtype,shape", [(d, s) for d in FLOAT_DTYPES for s in SMALL_SHAPES]
                         + [("float32", (1000, 1000))], ids=str)
def test_dtypes_and_shapes_on_the_default_topology(dtype, shape, rank, size):
    inputs = _inputs(_seed("dtype", dtype, shape), dtype, shape, size)
    tensor = _tensor(inputs[rank], dtype)
    before = tensor.clone()
    result = bf.neighbor_allreduce(tensor, name="dt.{}.{}".format(dtype, shape))
    w = nr.static_mixing(tu.ExponentialGraph(size), weighted=False)
    _check(result, tensor, before, w, inputs, rank, dtype, "{} {}".format(dtype, shape))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_on_a_weighted_topology(dtype, rank, size):
    # Metropolis-Hastings weights: unequal weights in a low-precision sum.
    graph = tu.MeshGrid2DGraph(size)
    assert bf.set_topology(graph, is_weighted=True)
    inputs = _inputs(_seed("half", dtype), dtype, (33,), size)
    tensor = _tensor(inputs[rank], dtype)
    before = tensor.clone()
    result = bf.neighbor_allreduce(tensor, name="half.{}".format(dtype))
    _check(result, tensor, before, graph.to_numpy(), inputs, rank, dtype, dtype)


def test_in_place_writes_the_input(rank, size):
    w = nr.static_mixing(tu.ExponentialGraph(size), weighted=False)
    inputs = _inputs(_seed("inplace"), "float32", (4, 3), size)
    tensor = _tensor(inputs[rank], "float32")
    storage = tensor.data_ptr()
    out = bf.neighbor_allreduce_(tensor, name="inplace")
    assert out is tensor and tensor.data_ptr() == storage
    nr.assert_weighted_close(tensor.to(torch.float64).numpy(), nr.mixed(w, inputs, rank),
                             nr.mixed_bound(w, inputs, rank), "float32", "in place")


def test_in_place_on_a_strided_view(rank, size):
    base = torch.arange(12, dtype=torch.float64).reshape(3, 4) * (rank + 1)
    column = base[:, 1]  # stride 4: not contiguous
    assert not column.is_contiguous()
    inputs = [np.array([1.0, 5.0, 9.0]) * (r + 1) for r in range(size)]
    w = nr.static_mixing(tu.ExponentialGraph(size), weighted=False)
    assert bf.neighbor_allreduce_(column, name="strided") is column
    nr.assert_weighted_close(base[:, 1].numpy(), nr.mixed(w, inputs, rank),
                             nr.mixed_bound(w, inputs, rank), "float64", "strided view")
    # The rest of the base tensor is untouched.
    assert torch.equal(base[:, 0], torch.tensor([0.0, 4.0, 8.0], dtype=torch.float64) * (rank + 1))
    assert torch.equal(base[:, 2:], (torch.arange(12, dtype=torch.float64).reshape(3, 4)
                                     * (rank + 1))[:, 2:])


def test_nonblocking_forms(rank, size):
    w = nr.static_mixing(tu.ExponentialGraph(size), weighted=False)
    inputs_a = _inputs(_seed("nb.a"), "float32", (6,), size)
    inputs_b = _inputs(_seed("nb.b"), "float64", (2, 2), size)
    a = _tensor(inputs_a[rank], "float32")
    a_before = a.clone()
    b = _tensor(inputs_b[rank], "float64")
    ha = bf.neighbor_allreduce_nonblocking(a, name="nb.a")
    hb = bf.neighbor_allreduce_nonblocking_(b, name="nb.b")
    while not bf.poll(ha):
        pass
    result = bf.synchronize(ha)
    _check(result, a, a_before, w, inputs_a, rank, "float32", "nonblocking")
    assert bf.wait(hb) is b
    nr.assert_weighted_close(b.numpy(), nr.mixed(w, inputs_b, rank),
                             nr.mixed_bound(w, inputs_b, rank), "float64", "nonblocking in place")


def test_explicit_weights_on_the_static_topology(rank, size):
    graph = tu.ExponentialGraph(size)
    ins = nr.in_neighbors(graph, rank)

    # Every rank can recompute every rank's arguments: they depend on the rank only.
    def args_of(r):
        sources = nr.in_neighbors(graph, r)
        return 0.5, {j: 0.1 * (k + 1) for k, j in enumerate(sources)}

    inputs = _inputs(_seed("explicit"), "float64", (3,), size)
    tensor = _tensor(inputs[rank], "float64")
    before = tensor.clone()
    self_weight, src_weights = args_of(rank)
    assert sorted(src_weights) == ins
    result = bf.neighbor_allreduce(tensor, self_weight=self_weight, src_weights=src_weights,
                                   name="explicit")
    w = nr.static_weighted_mixing(graph, [args_of(r) for r in range(size)])
    _check(result, tensor, before, w, inputs, rank, "float64", "explicit weights")


def test_listed_subset_of_in_neighbours_others_weigh_zero(rank, size):
    # Only the first in-neighbour is listed: the others still send (static topology)
    # but must not count. With no in-neighbours the result is self_weight * x.
    graph = tu.ExponentialGraph(size)

    def args_of(r):
        sources = nr.in_neighbors(graph, r)
        return 0.75, ({sources[0]: 0.25} if sources else {})

    inputs = _inputs(_seed("subset"), "float32", (5,), size)
    tensor = _tensor(inputs[rank], "float32")
    before = tensor.clone()
    self_weight, src_weights = args_of(rank)
    result = bf.neighbor_allreduce(tensor, self_weight=self_weight, src_weights=src_weights,
                                   name="subset")
    w = nr.static_weighted_mixing(graph, [args_of(r) for r in range(size)])
    _check(result, tensor, before, w, inputs, rank, "float32", "subset of in-neighbours")
    # No source listed at all: self_weight * x on every rank, the sends still matched.
    result = bf.neighbor_allreduce(tensor, self_weight=0.5, src_weights={}, name="subset.none")
    assert torch.equal(tensor, before)
    np.testing.assert_allclose(result.numpy(), 0.5 * inputs[rank], rtol=1e-6, atol=0)


def test_exact_float64_sums(rank, size):
    # Weights 1.0 and values float32 would flush (2^-256), overflow (2^600) or round
    # (2^20 + k·2^-20): float64 accumulation gives the exact sum, in any order.
    def value(r):
        k = float(r + 1)
        return np.array([k * 2.0 ** -256, k, k * 2.0 ** 600, 2.0 ** 20 + k * 2.0 ** -20,
                         -k * 2.0 ** -1000])

    dsts = [sorted({(r + 1) % size, (r + 2) % size} - {r}) for r in range(size)]
    srcs = [[j for j in range(size) if r in dsts[j]] for r in range(size)]
    tensor = torch.from_numpy(value(rank))
    before = tensor.clone()
    result = bf.neighbor_allreduce(tensor, self_weight=1.0,
                                   src_weights={j: 1.0 for j in srcs[rank]},
                                   dst_weights=dsts[rank], name="exact")
    assert torch.equal(tensor, before)
    members = [rank] + srcs[rank]
    expected = np.array([sum(r + 1 for r in members) * 2.0 ** -256,
                         float(sum(r + 1 for r in members)),
                         sum(r + 1 for r in members) * 2.0 ** 600,
                         len(members) * 2.0 ** 20 + sum(r + 1 for r in members) * 2.0 ** -20,
                         -sum(r + 1 for r in members) * 2.0 ** -1000])
    assert result.dtype == torch.float64
    np.testing.assert_array_equal(result.numpy(), expected)


@pytest.mark.skipif(bf.size() != 1, reason="a job of one rank")
def test_one_rank_returns_the_self_weighted_input():
    x = torch.tensor([1.5, -2.0, 3.25])
    before = x.clone()
    assert torch.equal(bf.neighbor_allreduce(x, name="one.static"), x)  # 1/(0+1) = 1
    assert torch.equal(x, before)
    got = bf.neighbor_allreduce(x, self_weight=0.25, src_weights={}, name="one.explicit")
    assert torch.equal(got, x * 0.25) and torch.equal(x, before)
    got = bf.neighbor_allreduce(x, self_weight=0.5, src_weights={}, dst_weights=[], name="one.dyn")
    assert torch.equal(got, x * 0.5) and torch.equal(x, before)
    assert bf.synchronize(bf.neighbor_allreduce_nonblocking(x, name="one.nb")).equal(x)
    y = x.clone()
    assert bf.neighbor_allreduce_(y, self_weight=2.0, src_weights={}, name="one.inplace") is y
    assert torch.equal(y, x * 2.0)


def test_numpy_arrays(rank, size):
    graph = tu.RingGraph(size)
    assert fnp.set_topology(graph)
    w = nr.static_mixing(graph, weighted=False)
    inputs = _inputs(_seed("numpy"), "float64", (2, 5), size)
    mine = inputs[rank].copy()
    got = fnp.neighbor_allreduce(mine, name="np.static")
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (2, 5)
    assert np.array_equal(mine, inputs[rank]), "the input must not be modified"
    nr.assert_weighted_close(got, nr.mixed(w, inputs, rank), nr.mixed_bound(w, inputs, rank),
                             "float64", "numpy")
    single = mine.astype(np.float32)
    as_single = [x.astype(np.float32).astype(np.float64) for x in inputs]  # what was sent
    assert fnp.neighbor_allreduce_(single, name="np.inplace") is single
    nr.assert_weighted_close(single, nr.mixed(w, as_single, rank),
                             nr.mixed_bound(w, as_single, rank), "float32", "numpy in place")
    as_half = [x.astype(np.float16).astype(np.float64) for x in inputs]
    handle = fnp.neighbor_allreduce_nonblocking(mine.astype(np.float16), name="np.nb")
    got = fnp.synchronize(handle)
    assert got.dtype == np.float16
    nr.assert_weighted_close(got, nr.mixed(w, as_half, rank), nr.mixed_bound(w, as_half, rank),
                             "float16", "numpy nonblocking")
