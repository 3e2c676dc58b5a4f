"""neighbor_allreduce, pair gossip and hierarchical_neighbor_allreduce of CUDA
tensors over NCCL, on the fake device, against the dense mixing-matrix product
W^T X in numpy (tests/python/parallel/neighbor_reference.py) — the CPU path's
reference. FAKE_CUDA_DELAY_US delays every stream item, so a missing stream wait
shows up as stale data.
"""

import os

import numpy as np
import pytest

import flock._collectives as ops
import flock._neighbor as nops
import flock.errors
import flock.torch as bf
import neighbor_reference as nr
from emulated_machines import fake_machines
from fake_cuda import ADAPTER, DeviceArray
from flock import topology_util as tu

FLOATS = ["float32", "float64", "float16"]


def inputs(size, shape, dtype, salt):
    return [np.random.default_rng(1000 * salt + r).uniform(-2, 2, shape).astype(dtype)
            for r in range(size)]


def neighbor_allreduce(array, **kwargs):
    return ops.synchronize(nops.neighbor_allreduce_nonblocking(ADAPTER, array, **kwargs))


@pytest.fixture
def exponential_topology(size):
    assert bf.set_topology(tu.ExponentialGraph(size))
    yield tu.ExponentialGraph(size)


@pytest.mark.parametrize("dtype", FLOATS)
def test_static_topology(rank, size, device, stream, dtype, exponential_topology):
    every = inputs(size, (7, 3), dtype, salt=FLOATS.index(dtype))
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = neighbor_allreduce(x, name="static." + dtype)
    w = nr.static_mixing(exponential_topology, weighted=False)
    nr.assert_weighted_close(out.numpy(), nr.mixed(w, every, rank), nr.mixed_bound(w, every, rank),
                             dtype, "static neighbor_allreduce on CUDA")
    np.testing.assert_array_equal(x.numpy(), every[rank])


def test_static_in_place(rank, size, device, stream, exponential_topology):
    every = inputs(size, (100,), "float32", salt=5)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = neighbor_allreduce(x, name="static.inplace", inplace=True)
    assert out is x
    w = nr.static_mixing(exponential_topology, weighted=False)
    nr.assert_weighted_close(x.numpy(), nr.mixed(w, every, rank), nr.mixed_bound(w, every, rank),
                             "float32", "in place")


def ring_args(size):
    """Each rank sends to the next with dst weight 2 (the receiver's weight 1/4)."""
    destinations = [{(j + 1) % size: 2.0} for j in range(size)] if size > 1 else [{}]
    args = nr.args_from_destinations(destinations, self_weight=0.5)
    return [(sw, {j: 0.25 for j in src}, dst) for sw, src, dst in args]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dynamic_weights_with_dst_scales(rank, size, device, stream, dtype):
    args = ring_args(size)
    every = inputs(size, (33,), dtype, salt=10)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    self_weight, src, dst = args[rank]
    out = neighbor_allreduce(x, self_weight=self_weight, src_weights=src, dst_weights=dst,
                             name="dynamic." + dtype)
    w = nr.dynamic_mixing(args)
    nr.assert_weighted_close(out.numpy(), nr.mixed(w, every, rank), nr.mixed_bound(w, every, rank),
                             dtype, "dynamic neighbor_allreduce on CUDA")


def test_pair_gossip(rank, size, device, stream):
    every = inputs(size, (16,), "float32", salt=20)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    partner = rank ^ 1
    if partner < size:
        out = ops.synchronize(nops.pair_gossip_nonblocking(ADAPTER, x, partner, name="gossip"))
        expected = 0.5 * every[rank].astype(np.float64) + 0.5 * every[partner]
    else:  # the odd one out still calls: these ops are negotiated on CUDA tensors
        out = neighbor_allreduce(x, self_weight=1.0, src_weights={}, dst_weights=[], name="gossip")
        expected = every[rank]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_unmatched_send_fails_on_every_rank(rank, size, device, stream):
    if size < 2:
        pytest.skip("needs two ranks")
    x = DeviceArray.from_numpy(np.ones(4, np.float32), device, stream)
    dst = [1] if rank == 0 else []  # rank 1 does not expect it
    with pytest.raises(flock.errors.FlockMismatchError) as raised:
        neighbor_allreduce(x, self_weight=1.0, src_weights={}, dst_weights=dst, name="unmatched")
    assert "rank 0 sends 4 elements" in str(raised.value)
    assert "rank 1 does not receive them" in str(raised.value)
    # ... and the next op works on every rank.
    again = neighbor_allreduce(x, self_weight=1.0, src_weights={}, dst_weights=[], name="after")
    np.testing.assert_array_equal(again.numpy(), np.ones(4, np.float32))


@pytest.mark.parametrize("local_size", [2])
def test_hierarchical_on_fake_machines(rank, size, device, stream, local_size):
    if size % local_size or size // local_size < 2:
        pytest.skip("needs at least two machines of {} ranks".format(local_size))
    machines = size // local_size
    with fake_machines(local_size):
        me = bf.machine_rank()
        nxt, prev = (me + 1) % machines, (me - 1) % machines
        src = {prev: 0.5} if machines > 1 else {}
        every = inputs(size, (9, 2), "float32", salt=30)
        x = DeviceArray.from_numpy(every[rank], device, stream)
        out = ops.synchronize(nops.hierarchical_neighbor_allreduce_nonblocking(
            ADAPTER, x, self_weight=0.5, src_machine_weights=src, dst_machine_weights=[nxt],
            name="hierarchical"))
        machine_w = 0.5 * (np.eye(machines) + np.roll(np.eye(machines), 1, axis=1))
        expected = nr.hierarchical(every, local_size, machine_w)[rank]
        bound = nr.hierarchical_bound(every, local_size, machine_w)[rank]
        nr.assert_weighted_close(out.numpy(), expected, bound, "float32", "hierarchical on CUDA")
        if os.environ.get("FLOCK_GPU_VIA_MPI") != "1":  # its own communicators, as NCCL's
            from flock._core_loader import core
            assert {"local", "cross"} <= set(core.gpu_info()["communicators"])
