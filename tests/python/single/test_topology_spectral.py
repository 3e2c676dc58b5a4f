"""Spectral analysis and consensus at scale through the Python API: circulant graphs
against the exact eigenvalues from numpy's FFT of the first row (up to 10^5 nodes),
the sparse solver against numpy's dense eigenvalues, the errors for input whose
spectrum says nothing about mixing, and run_consensus against numpy's W^T x.
"""

import numpy as np
import pytest

import flock.topology as tu
from flock.errors import FlockInvalidArgumentError


def fourier_lambda2(graph, n):
    """|lambda_2| of a circulant W: the second largest modulus of the FFT of its first row
    (numpy: an implementation independent of flock's)."""
    row = np.zeros(n)
    for j in graph.out_neighbors(0) + [0]:
        row[j] = graph.weight(0, j)
    moduli = np.sort(np.abs(np.fft.fft(row)))[::-1]
    return moduli[1]


@pytest.mark.parametrize("n", [2, 3, 7, 64, 100, 1000, 4096, 10007, 100000])
@pytest.mark.parametrize("make", [tu.ExponentialTwoGraph, lambda n: tu.ExponentialGraph(n, 3),
                                  tu.SymmetricExponentialGraph, tu.RingGraph,
                                  lambda n: tu.RingGraph(n, 1)],
                         ids=["exp2", "exp3", "symexp", "ring", "ring1"])
def test_circulant_graphs_match_the_fourier_transform_of_their_row(make, n):
    graph = make(n)
    expected = fourier_lambda2(graph, n)
    assert tu.second_largest_eigenvalue_modulus(graph) == pytest.approx(expected, abs=1e-8)
    assert tu.second_largest_eigenvalue_modulus(graph, "circulant") == \
        pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize("n", [5, 40, 300])
def test_sparse_matches_numpy_dense_eigenvalues(n):
    for graph in (tu.MeshGrid2DGraph(n), tu.ExponentialGraph(n), tu.StarGraph(n)):
        moduli = np.sort(np.abs(np.linalg.eigvals(graph.to_numpy())))[::-1]
        assert tu.second_largest_eigenvalue_modulus(graph, "sparse") == \
            pytest.approx(moduli[1], abs=1e-8)


def test_non_stochastic_and_disconnected_input_are_errors():
    with pytest.raises(FlockInvalidArgumentError, match="neither column- nor row-stochastic"):
        tu.spectral_gap(np.ones((4, 4)))
    with pytest.raises(FlockInvalidArgumentError, match="not strongly connected"):
        tu.spectral_gap(np.eye(3))
    assert tu.predicted_consensus_iterations(np.eye(3), 1e-4) is None
    with pytest.raises(FlockInvalidArgumentError, match="not circulant"):
        tu.second_largest_eigenvalue_modulus(tu.StarGraph(5), "circulant")
    with pytest.raises(ValueError, match="method must be"):
        tu.spectral_gap(tu.RingGraph(5), "fast")


def numpy_errors(matrices, x0, steps):
    """Relative errors of x <- W_k^T x, from dense numpy matrices."""
    x, mean = x0.copy(), x0.mean()
    start = np.linalg.norm(x - mean)
    errors = [1.0]
    for k in range(steps):
        x = matrices(k).T @ x
        errors.append(np.linalg.norm(x - mean) / start)
    return np.array(errors)


@pytest.mark.parametrize("graph", [tu.ExponentialGraph(50), tu.MeshGrid2DGraph(30),
                                   tu.StarGraph(9)], ids=["exp", "mesh", "star"])
def test_run_consensus_follows_numpy(graph):
    run = tu.run_consensus(graph, eps=1e-15, max_iterations=20, seed=7)
    w = graph.to_numpy()
    x0 = tu.random_start(graph.number_of_nodes(), 7)
    assert (run.iterations, run.converged) == (20, False)
    np.testing.assert_allclose(run.errors, numpy_errors(lambda k: w, x0, 20), rtol=1e-10,
                               atol=1e-14)


def test_run_consensus_on_a_schedule_follows_numpy():
    schedule = tu.DynamicOnePeer(tu.ExponentialTwoGraph(16))
    run = tu.run_consensus(schedule, eps=1e-15, max_iterations=12, seed=3)
    x0 = tu.random_start(16, 3)
    expected = numpy_errors(lambda k: schedule.mixing_graph(k).to_numpy(), x0, 12)
    np.testing.assert_allclose(run.errors[:len(expected)], expected[:len(run.errors)],
                               rtol=1e-10, atol=1e-13)
    assert run.converged and run.iterations == 4  # exact average after log2(16) steps


def test_run_consensus_of_a_large_graph_uses_threads_and_stays_exact():
    n = 200_000  # 3.6 M nonzeros: the steps are split over the cores
    graph = tu.ExponentialTwoGraph(n)
    offsets = [0] + [2 ** k for k in range(18)]
    x = tu.random_start(n, 5)
    mean, start = x.mean(), np.linalg.norm(x - x.mean())
    errors = [1.0]
    for _ in range(6):  # node j averages the values of j - o for every offset o
        x = sum(np.roll(x, o) for o in offsets) / len(offsets)
        errors.append(np.linalg.norm(x - mean) / start)
    run = tu.run_consensus(graph, eps=1e-15, max_iterations=6, seed=5)
    np.testing.assert_allclose(run.errors, errors, rtol=1e-9)


def test_run_consensus_refuses_a_start_of_the_wrong_size():
    with pytest.raises(FlockInvalidArgumentError, match="x0 must have 5 values"):
        tu.run_consensus(tu.RingGraph(5), x0=[1.0, 2.0])
