"""Failures on the GPU path end in errors on every rank, never in a hang: a rank that
rejects a CUDA neighbor op locally, a neighbor op as the job's first CUDA op with a rank
that has no transfers (the communicator is made outside any NCCL group, by every rank),
and an asynchronous NCCL error (the fake NCCL's FAKE_NCCL_FAIL_AFTER) that fails the
op waited for and every later CUDA op, after which a new init() works again.
"""

import contextlib
import os

import numpy as np
import pytest

import flock._collectives as ops
import flock._neighbor as nops
import flock.errors
import flock.torch as bf
from fake_cuda import ADAPTER, DeviceArray

VIA_MPI = os.environ.get("FLOCK_GPU_VIA_MPI") == "1"


@contextlib.contextmanager
def fresh_flock(**env):
    """flock shut down and started again (a new GPU backend, new communicators) with
    `env` set; then restored and started again as before."""
    saved = {name: os.environ.get(name) for name in env}
    bf.shutdown()
    os.environ.update(env)
    try:
        bf.init()
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
        bf.shutdown()
        bf.init()


def test_a_neighbor_op_first_with_an_idle_rank(rank, size, device, stream):
    with fresh_flock():
        x = DeviceArray.from_numpy(np.full(8, rank + 1.0, np.float32), device, stream)
        partner = rank + 1 if rank % 2 == 1 else rank - 1  # pairs (1,2), (3,4); 0 is idle
        if rank == 0 or partner >= size:
            out = ops.synchronize(nops.neighbor_allreduce_nonblocking(
                ADAPTER, x, self_weight=1.0, src_weights={}, dst_weights=[], name="first"))
            expected = rank + 1.0
        else:
            out = ops.synchronize(nops.neighbor_allreduce_nonblocking(
                ADAPTER, x, self_weight=0.5, src_weights={partner: 0.5}, dst_weights=[partner],
                name="first"))
            expected = 0.5 * (rank + 1.0) + 0.5 * (partner + 1.0)
        np.testing.assert_allclose(out.numpy(), np.full(8, expected), rtol=1e-6)


def test_a_local_rejection_fails_the_cuda_neighbor_op_on_every_rank(rank, size, device, stream):
    x = DeviceArray.from_numpy(np.ones(4, np.float32), device, stream)
    self_weight = "half" if rank == 0 else 1.0  # rank 0's argument cannot be read
    with pytest.raises(flock.errors.FlockError) as raised:
        ops.synchronize(nops.neighbor_allreduce_nonblocking(
            ADAPTER, x, self_weight=self_weight, src_weights={}, dst_weights=[], name="rejected"))
    if rank == 0:
        assert "self_weight" in str(raised.value)
    # The next CUDA neighbor op works everywhere.
    out = ops.synchronize(nops.neighbor_allreduce_nonblocking(
        ADAPTER, x, self_weight=1.0, src_weights={}, dst_weights=[], name="after.rejected"))
    np.testing.assert_array_equal(out.numpy(), np.ones(4, np.float32))


def test_an_asynchronous_nccl_error_fails_on_every_rank(rank, size, device, stream):
    if VIA_MPI or size < 2:
        pytest.skip("needs NCCL between two ranks")
    with fresh_flock(FAKE_NCCL_FAIL_AFTER="1"):  # each new communicator's second op fails
        x = DeviceArray.from_numpy(np.ones(16, np.float32), device, stream)
        out = ops.synchronize(ops.allreduce_nonblocking(ADAPTER, x, average=False, name="a.ok"),
                              block=True)
        np.testing.assert_array_equal(out.numpy(), np.full(16, size, np.float32))
        handle = ops.allreduce_nonblocking(ADAPTER, x, average=False, name="a.fails")
        with pytest.raises(flock.errors.FlockTransportError, match="NCCL"):
            ops.synchronize(handle, block=True)
        with pytest.raises(flock.errors.FlockTransportError, match="NCCL"):
            ops.synchronize(ops.allreduce_nonblocking(ADAPTER, x, name="a.later"), block=True)
    # A new init() made a new backend: CUDA ops work again.
    x = DeviceArray.from_numpy(np.ones(16, np.float32), device, stream)
    out = ops.synchronize(ops.allreduce_nonblocking(ADAPTER, x, average=False, name="a.again"))
    np.testing.assert_array_equal(out.numpy(), np.full(16, size, np.float32))


def test_submission_and_synchronize_on_different_streams(rank, size, device, stream):
    from fake_cuda import Stream
    every = [np.full(32, r + 1.0, np.float32) for r in range(size)]
    x = DeviceArray.from_numpy(every[rank], device, stream)
    handle = ops.allreduce_nonblocking(ADAPTER, x, average=False, name="two.streams")
    other = Stream(device)
    ADAPTER.stream = other  # the caller's current stream changed before synchronize
    out = ops.synchronize(handle)
    out.stream = other
    np.testing.assert_array_equal(out.numpy(), np.sum(every, axis=0))


def test_init_device_argument_and_flock_device(rank, size):
    """init(device=...) wins over FLOCK_DEVICE, which wins over the host-local default."""
    from flock._core_loader import core
    with fresh_flock(FLOCK_DEVICE=str((rank + 1) % 4)):
        x = DeviceArray.from_numpy(np.ones(2, np.float32), (rank + 1) % 4)
        ops.synchronize(ops.allreduce_nonblocking(ADAPTER, x, average=False, name="dev.env"))
        assert core.gpu_info()["device"] == (rank + 1) % 4
    bf.shutdown()
    try:
        bf.init(device=(rank + 2) % 4)
        x = DeviceArray.from_numpy(np.ones(2, np.float32), (rank + 2) % 4)
        out = ops.synchronize(ops.allreduce_nonblocking(ADAPTER, x, average=False, name="dev.arg"))
        np.testing.assert_array_equal(out.numpy(), np.full(2, size, np.float32))
        assert core.gpu_info()["device"] == (rank + 2) % 4
    finally:
        bf.shutdown()
        bf.init()


def test_a_fusion_buffer_too_large_for_the_device_fails_at_the_first_cuda_tensor(
        rank, size, device, stream):
    """The device fusion buffer is allocated when the backend is made (a fused batch then
    never allocates, so it cannot fail on one rank alone inside NCCL)."""
    with fresh_flock(FLOCK_FUSION_THRESHOLD=str(1 << 40)):  # 1 TiB
        x = DeviceArray.from_numpy(np.ones(4, np.float32), device, stream)
        with pytest.raises(flock.errors.FlockError, match="FLOCK_FUSION_THRESHOLD"):
            ops.synchronize(ops.allreduce_nonblocking(ADAPTER, x, name="too.large"))
        import torch
        assert bf.allreduce(torch.ones(2), average=False).tolist() == [float(size)] * 2
