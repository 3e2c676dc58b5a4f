"""Ranks that disagree on the device of a neighbor op: some pass CUDA tensors (the
device path, negotiated through rank 0), others CPU tensors (the host path, which
talks to its peers only). Neither side could finish alone; flock fails the call on
every rank, at once (FLOCK_STALL_SHUTDOWN_S is off in these runs, so a hang would
be caught only by the job's timeout), with an error naming a rank of each kind. The
next call of the same name then works everywhere: both paths number calls alike.
"""

import time

import numpy as np
import pytest
import torch

import flock._collectives as ops
import flock._neighbor as nops
import flock.errors
import flock.torch as bf
import flock.torch._adapter as torch_adapter
from emulated_machines import fake_machines
from fake_cuda import ADAPTER, DeviceArray
from flock import topology_util as tu

# Far below any stall limit: the error comes from the ranks' reports, not a timer.
PROMPT_S = 5.0


def tensor_on(on_cpu, values, device, stream):
    if on_cpu:
        return torch_adapter, torch.from_numpy(values.copy())
    return ADAPTER, DeviceArray.from_numpy(values, device, stream)


def cpu_ranks_of(case, size):
    return {"first": {0}, "last": {size - 1}, "half": set(range(0, size, 2))}[case]


def assert_fails_promptly(submit):
    start = time.monotonic()
    with pytest.raises(flock.errors.FlockMismatchError) as raised:
        ops.synchronize(submit())
    assert time.monotonic() - start < PROMPT_S
    message = str(raised.value)
    assert "disagree on the device" in message and "CUDA" in message and "CPU" in message
    return message


@pytest.fixture
def exponential_topology(size):
    assert bf.set_topology(tu.ExponentialGraph(size))
    yield


@pytest.mark.parametrize("case", ["first", "last", "half"])
def test_neighbor_allreduce_with_a_cpu_rank_fails_everywhere(rank, size, device, stream, case,
                                                             exponential_topology):
    if size < 2:
        pytest.skip("needs two ranks")
    on_cpu = rank in cpu_ranks_of(case, size)
    values = np.full(6, rank + 1.0, np.float32)
    adapter, x = tensor_on(on_cpu, values, device, stream)
    assert_fails_promptly(lambda: nops.neighbor_allreduce_nonblocking(adapter, x,
                                                                      name="mixed." + case))
    # Every rank is past call 0 of the name: call 1 on CUDA everywhere works.
    y = DeviceArray.from_numpy(values, device, stream)
    out = ops.synchronize(nops.neighbor_allreduce_nonblocking(ADAPTER, y, self_weight=1.0,
                                                              src_weights={}, dst_weights=[],
                                                              name="mixed." + case))
    np.testing.assert_array_equal(out.numpy(), values)


def test_a_late_cuda_rank_fails_when_it_gets_there(rank, size, device, stream,
                                                   exponential_topology):
    """The last rank calls long after the others saw the conflict: rank 0's answer
    waits for it, and its call fails at once without being announced."""
    if size < 3:
        pytest.skip("needs a CPU rank, a CUDA rank and a late CUDA rank")
    values = np.full(5, 2.0, np.float64)
    adapter, x = tensor_on(rank == 0, values, device, stream)
    if rank == size - 1:
        time.sleep(1.0)
    assert_fails_promptly(lambda: nops.neighbor_allreduce_nonblocking(adapter, x, name="late"))
    bf.barrier()


def test_neighbor_allgather_with_a_cpu_rank_fails_everywhere(rank, size, device, stream):
    if size < 2:
        pytest.skip("needs two ranks")
    peers = sorted({(rank - 1) % size, (rank + 1) % size} - {rank})
    adapter, x = tensor_on(rank == size - 1, np.ones((2, 3), np.float32), device, stream)
    assert_fails_promptly(lambda: nops.neighbor_allgather_nonblocking(
        adapter, x, src_ranks=peers, dst_ranks=peers, name="mixed.gather"))


def test_hierarchical_with_a_cpu_rank_fails_everywhere(rank, size, device, stream):
    local_size = 2
    if size % local_size or size // local_size < 2:
        pytest.skip("needs at least two machines of two ranks")
    machines = size // local_size
    with fake_machines(local_size):
        me = bf.machine_rank()
        nxt, prev = (me + 1) % machines, (me - 1) % machines
        adapter, x = tensor_on(rank == 1, np.ones(8, np.float32), device, stream)
        assert_fails_promptly(lambda: nops.hierarchical_neighbor_allreduce_nonblocking(
            adapter, x, self_weight=0.5, src_machine_weights={prev: 0.5},
            dst_machine_weights=[nxt], name="mixed.hierarchical"))


def test_large_cpu_tensors_in_lanes_are_drained(rank, size, device, stream,
                                                exponential_topology):
    """A CPU rank's tensor above the inline limit travels in its own lane; the CUDA
    side must still receive (and drop) it, or the CPU rank's send never ends."""
    if size < 2:
        pytest.skip("needs two ranks")
    values = np.ones(200_000, np.float32)
    adapter, x = tensor_on(rank == 0, values, device, stream)
    assert_fails_promptly(lambda: nops.neighbor_allreduce_nonblocking(adapter, x,
                                                                      name="mixed.lanes"))
    bf.barrier()
