"""Checks run on every rank of a job spread over emulated hosts.

test_emulated_cluster.py launches this with pytest on each rank:

    flockrun -np 4 -H h1:2,h2:2 python tests/python/mpi_pytest.py OUT \
        tests/python/cluster/on_hosts.py

(The file name does not start with test_ so that a plain pytest run of this
folder does not collect it outside a cluster.) Ranks are placed by slot, so
with L = CLUSTER_RANKS_PER_HOST host h(m+1) holds ranks mL ... mL + L - 1. Results are checked against numpy
references that each rank computes alone from every rank's seeded input.
"""

import os
import socket
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parallel"))

import flock.torch as bf  # noqa: E402
import neighbor_reference as nr  # noqa: E402
from flock import topology as tu  # noqa: E402
from reference import rank_input, to_torch  # noqa: E402

RANKS_PER_HOST = int(os.environ.get("CLUSTER_RANKS_PER_HOST", "2"))
# Big enough that the exchanges between hosts are many TCP segments, so the
# link counters the outer test reads cannot be explained by control traffic.
LARGE = (1 << 20,)  # float32: 4 MiB

bf.init()


@pytest.fixture(scope="module", autouse=True)
def flock_runtime():
    yield
    bf.shutdown()


def _inputs(seed, dtype, shape):
    return [rank_input(seed, r, dtype, shape) for r in range(bf.size())]


def _check_hierarchical(got, inputs, machine_w, what):
    """got (float64) is this rank's machine-level mix of the machine means."""
    rank = bf.rank()
    nr.assert_weighted_close(got.numpy(), nr.hierarchical(inputs, RANKS_PER_HOST, machine_w)[rank],
                             nr.hierarchical_bound(inputs, RANKS_PER_HOST, machine_w)[rank],
                             "float64", "hierarchical " + what)


def test_machines_follow_the_hosts():
    rank, size = bf.rank(), bf.size()
    assert size % RANKS_PER_HOST == 0
    assert socket.gethostname() == "h{}".format(rank // RANKS_PER_HOST + 1)
    assert bf.machine_size() == size // RANKS_PER_HOST
    assert bf.machine_rank() == rank // RANKS_PER_HOST
    assert bf.local_size() == RANKS_PER_HOST
    assert bf.local_rank() == rank % RANKS_PER_HOST
    assert bf.is_homogeneous()


@pytest.mark.parametrize("shape", [(7,), LARGE])
def test_allreduce(shape):
    inputs = _inputs(11, "float32", shape)
    got = bf.allreduce(to_torch(inputs[bf.rank()], "float32"), average=False,
                       name="cluster.allreduce.{}".format(shape[0]))
    np.testing.assert_allclose(got.double().numpy(), np.sum(inputs, axis=0),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(7,), LARGE])
def test_neighbor_allreduce_exponential_graph(shape):
    size, rank = bf.size(), bf.rank()
    topology = tu.ExponentialTwoGraph(size)
    assert bf.set_topology(topology)
    inputs = _inputs(12, "float32", shape)
    got = bf.neighbor_allreduce(to_torch(inputs[rank], "float32"),
                                name="cluster.neighbor.{}".format(shape[0]))
    w = nr.static_mixing(topology, weighted=False)
    nr.assert_weighted_close(got.double().numpy(), nr.mixed(w, inputs, rank),
                             nr.mixed_bound(w, inputs, rank), "float32", "neighbor")


@pytest.mark.parametrize("wait_order", ["submitted", "reversed"])
def test_a_burst_of_lanes_beyond_the_budget(wait_order):
    # 24 calls of 1.5 MiB: six times FLOCK_NEIGHBOR_LANE_BUDGET (4 MiB) per peer on
    # another host, so most lanes wait in the queue and start newest first; every
    # result must still be the reference's, whichever order they are waited in.
    size, rank = bf.size(), bf.rank()
    topology = tu.ExponentialTwoGraph(size)
    assert bf.set_topology(topology)
    w = nr.static_mixing(topology, weighted=False)
    calls = range(24)
    inputs = {k: _inputs(40 + k, "float32", (3 << 17,)) for k in calls}
    handles = {k: bf.neighbor_allreduce_nonblocking(
        to_torch(inputs[k][rank], "float32"), name="cluster.burst.{}".format(k))
        for k in calls}
    for k in (calls if wait_order == "submitted" else reversed(calls)):
        got = bf.synchronize(handles[k])
        nr.assert_weighted_close(got.double().numpy(), nr.mixed(w, inputs[k], rank),
                                 nr.mixed_bound(w, inputs[k], rank), "float32",
                                 "burst call {}".format(k))


@pytest.mark.parametrize("shape", [(7,), LARGE])
def test_hierarchical_static_machine_ring(shape):
    machines, rank = bf.machine_size(), bf.rank()
    topology = tu.RingGraph(machines)
    assert bf.set_machine_topology(topology)
    inputs = _inputs(13, "float64", shape)
    got = bf.hierarchical_neighbor_allreduce(to_torch(inputs[rank], "float64"),
                                             name="cluster.hier.{}".format(shape[0]))
    _check_hierarchical(got, inputs, nr.static_mixing(topology, weighted=False), "static")


def test_hierarchical_dynamic_one_peer():
    # Machine m sends to machine m+1 only: each machine's result is the mean of
    # its own machine mean and its predecessor's.
    machines, rank = bf.machine_size(), bf.rank()
    me = bf.machine_rank()
    inputs = _inputs(14, "float64", LARGE)
    w = np.zeros((machines, machines))
    for m in range(machines):
        w[m, m] += 0.5
        w[(m - 1) % machines, m] += 0.5
    src = {} if machines == 1 else {(me - 1) % machines: 0.5}
    dst = [] if machines == 1 else [(me + 1) % machines]
    got = bf.hierarchical_neighbor_allreduce(
        to_torch(inputs[rank], "float64"), self_weight=0.5 if machines > 1 else 1.0,
        src_machine_weights=src, dst_machine_weights=dst, name="cluster.hier.dynamic")
    if machines == 1:
        w = np.array([[1.0]])
    _check_hierarchical(got, inputs, w, "dynamic")


def test_pending_ops_complete_in_any_order():
    # Nonblocking ops submitted in a rank-dependent order still pair up by name.
    names = ["cluster.order.{}".format(k) for k in range(8)]
    order = list(np.random.default_rng(bf.rank()).permutation(len(names)))
    handles = {}
    for k in order:
        handles[k] = bf.allreduce_nonblocking(torch.full((1000,), float(k)), average=True,
                                              name=names[k])
    for k in range(len(names)):
        assert torch.all(bf.synchronize(handles[k]) == float(k))


@pytest.mark.parametrize("shape", [(7,), LARGE])
def test_window_put_and_update_across_hosts(shape):
    size, rank = bf.size(), bf.rank()
    topology = tu.ExponentialTwoGraph(size)
    assert bf.set_topology(topology)
    inputs = _inputs(14, "float64", shape)
    x = to_torch(inputs[rank], "float64").clone()
    name = "cluster.win.{}".format(shape[0])
    assert bf.win_create(x, name, zero_init=True)
    try:
        bf.win_put(x, name)
        bf.barrier()
        got = bf.win_update(name)
        w = nr.static_mixing(topology, weighted=False)
        nr.assert_weighted_close(got.numpy(), nr.mixed(w, inputs, rank),
                                 nr.mixed_bound(w, inputs, rank), "float64", "window")
    finally:
        bf.win_free(name)


def test_window_put_to_a_busy_host_completes_without_it():
    """Rank 0 (host h1) computes for 1.5 s without calling flock; puts to it from other
    hosts are applied meanwhile, by its engine thread over TCP."""
    import time
    rank = bf.rank()
    assert bf.set_topology(tu.FullyConnectedGraph(bf.size()))
    x = torch.full((1 << 18,), float(rank), dtype=torch.float64)  # 2 MiB: a lane
    assert bf.win_create(x, "cluster.busy")
    bf.barrier()
    others = range(RANKS_PER_HOST, bf.size())  # the ranks on other hosts
    if rank == 0:
        time.sleep(1.5)
        # Applied while this rank slept: its engine thread served them over TCP.
        versions = bf.get_win_version("cluster.busy")
        assert all(versions[r] == 1 for r in others), versions
    elif rank in others:
        bf.win_put(x, "cluster.busy", dst_weights={0: 1.0})
    bf.barrier()
    bf.win_free("cluster.busy")
