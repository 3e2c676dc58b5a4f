"""The in-process MPI floors of the benchmarks (benchmarks/mpi_floor.py) compute what
they stand in for: the Isend/Irecv neighbor floor gives the dense reference W^T X of the
uniform static topology, and the allreduce floor the elementwise sum. The benchmarks'
flock/floor ratios are only meaningful if the floor does the same work correctly."""

import os
import sys
import zlib

import pytest
import torch

import flock.torch as bf
import neighbor_reference as nr
from flock import topology as tu
from reference import rank_input, reduce_reference

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
import mpi_floor  # noqa: E402


def _floor():
    if not bf.mpi_threads_supported():  # the floor calls MPI beside flock's engine thread
        pytest.skip("MPI_THREAD_MULTIPLE not provided")
    try:
        return mpi_floor.MpiFloor()
    except mpi_floor.MpiUnavailable as error:  # the same on every rank: one MPI library
        pytest.skip(str(error))


def _inputs(key, size, shape):
    seed = zlib.crc32(key.encode())
    return [rank_input(seed, r, "float32", shape) for r in range(size)]


@pytest.mark.parametrize("count", [1, 7, 100003])
def test_neighbor_floor_matches_dense_reference_and_flock(count, rank, size):
    mpi = _floor()
    graph = tu.ExponentialGraph(size)
    assert bf.set_topology(graph)
    inputs = _inputs("floor.{}".format(count), size, (count,))
    x = torch.from_numpy(inputs[rank]).to(torch.float32)
    floor = mpi_floor.NeighborFloor(mpi, x, bf.in_neighbor_ranks(), bf.out_neighbor_ranks())
    bf.barrier()
    got = floor().to(torch.float64).numpy()
    # Every rank makes both calls before any check: a rank that failed first would
    # leave the others waiting in the second.
    flock_out = bf.neighbor_allreduce(x, name="floor.flock.{}".format(count))
    w = nr.static_mixing(graph, weighted=False)
    expected, bound = nr.mixed(w, inputs, rank), nr.mixed_bound(w, inputs, rank)
    nr.assert_weighted_close(got, expected, bound, "float32", "in-process floor")
    nr.assert_weighted_close(flock_out.to(torch.float64).numpy(), expected, bound, "float32",
                             "flock")


def test_neighbor_floor_on_a_list_reduces_each_tensor(rank, size):
    mpi = _floor()
    graph = tu.ExponentialGraph(size)
    assert bf.set_topology(graph)
    counts = [3, 100003, 1, 4099]  # each its own messages, all in flight at once
    inputs = [_inputs("floor.list.{}".format(i), size, (n,)) for i, n in enumerate(counts)]
    xs = [torch.from_numpy(per_rank[rank]).to(torch.float32) for per_rank in inputs]
    floor = mpi_floor.NeighborFloor(mpi, xs, bf.in_neighbor_ranks(), bf.out_neighbor_ranks())
    bf.barrier()
    outs = floor()
    assert len(outs) == len(xs)
    w = nr.static_mixing(graph, weighted=False)
    for out, per_rank in zip(outs, inputs):
        nr.assert_weighted_close(out.to(torch.float64).numpy(), nr.mixed(w, per_rank, rank),
                                 nr.mixed_bound(w, per_rank, rank), "float32", "floor on a list")


def test_allreduce_floor_sums(rank, size):
    mpi = _floor()
    inputs = _inputs("floor.allreduce", size, (1000,))
    tensor = torch.from_numpy(inputs[rank]).to(torch.float32).clone()
    bf.barrier()
    mpi.allreduce_(tensor)
    expected = reduce_reference(inputs, "sum")
    assert torch.allclose(tensor.to(torch.float64), torch.from_numpy(expected),
                          rtol=1e-5, atol=1e-5 * size)
