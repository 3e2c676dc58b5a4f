"""allreduce and broadcast of CUDA tensors over NCCL, on the fake device.

Each rank's input is a deterministic function of (test, rank), so every rank can
compute the numpy reference of the whole job itself. FAKE_CUDA_DELAY_US (set by
scripts/test_gpu.sh) delays every piece of stream work: an op that did not wait
for the caller's stream, or a result read before flock's stream finished, reads
stale data and fails the comparison.
"""

import os

import numpy as np
import pytest

import flock
import flock.errors
import flock._collectives as ops
import flock._neighbor as nops
import flock.torch as bf
from fake_cuda import ADAPTER, DeviceArray

VIA_MPI = os.environ.get("FLOCK_GPU_VIA_MPI") == "1"
REDUCTIONS = {"sum": np.sum, "min": np.min, "max": np.max, "product": np.prod}
DTYPES = ["float32", "float64", "float16", "int32", "int64", "int8", "uint8"]


def inputs(size, shape, dtype, salt=0):
    """Every rank's input: small integers (exact in every dtype, products included)."""
    return [np.random.default_rng(100 * salt + r).integers(1, 3, shape).astype(dtype)
            for r in range(size)]


def run_allreduce(array, **kwargs):
    return ops.synchronize(ops.allreduce_nonblocking(ADAPTER, array, **kwargs))


def test_nccl_is_built():
    assert bf.nccl_built() is True


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_allreduce_matches_numpy(rank, size, device, stream, dtype, op):
    every = inputs(size, (3, 5), dtype, salt=DTYPES.index(dtype))
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = run_allreduce(x, op=op, name="ar.{}.{}".format(dtype, op))
    expected = REDUCTIONS[op](np.stack(every), axis=0).astype(dtype)
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(x.numpy(), every[rank])  # the input is left alone


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_average(rank, size, device, stream, dtype):
    every = inputs(size, (17,), dtype, salt=7)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = run_allreduce(x, average=True, name="avg." + dtype)
    expected = np.mean(np.stack(every).astype(np.float64), axis=0)
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected,
                               rtol=1e-3 if dtype == "float16" else 1e-6)


def test_in_place(rank, size, device, stream):
    every = inputs(size, (1000,), "float32", salt=11)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = run_allreduce(x, average=False, inplace=True, name="inplace")
    assert out is x
    np.testing.assert_array_equal(x.numpy(), np.sum(np.stack(every), axis=0))


def test_many_small_ops_are_fused(rank, size, device, stream):
    from flock._core_loader import core
    before = core.engine_counters()["fused_batches"]
    every = [inputs(size, (n + 1,), "float32", salt=20 + n) for n in range(12)]
    arrays = [DeviceArray.from_numpy(e[rank], device, stream) for e in every]
    handles = [ops.allreduce_nonblocking(ADAPTER, a, average=False, name="fuse.{}".format(i))
               for i, a in enumerate(arrays)]
    outs = [ops.synchronize(h) for h in handles]
    for out, e in zip(outs, every):
        np.testing.assert_array_equal(out.numpy(), np.sum(np.stack(e), axis=0))
    assert core.engine_counters()["fused_batches"] > before


@pytest.mark.parametrize("root", [0, -1])
def test_broadcast(rank, size, device, stream, root):
    root = root % size
    every = inputs(size, (4, 4), "float64", salt=30)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = ops.synchronize(ops.broadcast_nonblocking(ADAPTER, x, root, name="bc.{}".format(root)))
    np.testing.assert_array_equal(out.numpy(), every[root])
    np.testing.assert_array_equal(x.numpy(), every[rank])  # not in place: the input stays


def test_blocking_synchronize(rank, size, device, stream):
    every = inputs(size, (64,), "float32", salt=40)
    x = DeviceArray.from_numpy(every[rank], device, stream)
    handle = ops.allreduce_nonblocking(ADAPTER, x, average=False, name="block")
    out = ops.synchronize(handle, block=True)
    np.testing.assert_array_equal(out.numpy(), np.sum(np.stack(every), axis=0))


def test_tensor_on_another_device_fails_on_every_rank(rank, size, device, stream):
    wrong = DeviceArray.from_numpy(np.ones(3, np.float32), (device + 1) % 4, stream) \
        if rank == 0 else DeviceArray.from_numpy(np.ones(3, np.float32), device, stream)
    with pytest.raises(flock.errors.FlockError) as raised:
        run_allreduce(wrong, name="wrong.device")
    if rank == 0:
        assert "flock uses cuda:{}".format(device) in str(raised.value)


def test_ranks_that_disagree_on_the_device_fail_on_every_rank(rank, size, device, stream):
    if size < 2:
        pytest.skip("needs two ranks")
    import torch
    tensor = torch.ones(3) if rank == 0 else DeviceArray.from_numpy(np.ones(3, np.float32),
                                                                    device, stream)
    import flock.torch._adapter as torch_adapter
    adapter = torch_adapter if rank == 0 else ADAPTER
    with pytest.raises(flock.errors.FlockError, match="device"):
        ops.synchronize(ops.allreduce_nonblocking(adapter, tensor, name="mixed.device"))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_allgather_with_different_first_dims(rank, size, device, stream, dtype):
    every = [np.full((r + 1, 3), r + 1, dtype) for r in range(size)]
    x = DeviceArray.from_numpy(every[rank], device, stream)
    out = ops.synchronize(ops.allgather_nonblocking(ADAPTER, x, name="gather." + dtype))
    assert out.device == device and out.shape == (sum(range(1, size + 1)), 3)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(every))


def test_neighbor_allgather_on_a_ring(rank, size, device, stream):
    """Each rank gathers from rank-1 and rank+1 (distinct when size > 2); row counts differ."""
    sources = sorted({(rank - 1) % size, (rank + 1) % size} - {rank})
    every = [np.full((r + 1, 2), r + 1, np.float64) for r in range(size)]
    x = DeviceArray.from_numpy(every[rank], device, stream)
    dst = sorted({(rank - 1) % size, (rank + 1) % size} - {rank})
    out = ops.synchronize(nops.neighbor_allgather_nonblocking(
        ADAPTER, x, src_ranks=sources, dst_ranks=dst, name="ngather"))
    expected = (np.concatenate([every[j] for j in sources]) if sources
                else np.zeros((0, 2), np.float64))
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_neighbor_allgather_rows_that_differ_fail_on_every_rank(rank, size, device, stream):
    if size < 2:
        pytest.skip("needs two ranks")
    peers = sorted({(rank - 1) % size, (rank + 1) % size} - {rank})
    x = DeviceArray.from_numpy(np.ones((2, 3 if rank == 0 else 4), np.float32), device, stream)
    with pytest.raises(flock.errors.FlockMismatchError, match="only dim 0 may differ"):
        ops.synchronize(nops.neighbor_allgather_nonblocking(
            ADAPTER, x, src_ranks=peers, dst_ranks=peers, name="ngather.rows"))


def test_int16_has_no_nccl_type_but_mpi_reduces_it(rank, size, device, stream):
    x = DeviceArray.from_numpy(np.ones(3, np.int16), device, stream)
    if VIA_MPI:
        out = run_allreduce(x, op="sum", name="int16")
        np.testing.assert_array_equal(out.numpy(), np.full(3, size, np.int16))
        return
    with pytest.raises(flock.errors.FlockError, match="NCCL has no int16"):
        run_allreduce(x, op="sum", name="int16")


def test_the_transport_is_the_one_asked_for(rank, size, device, stream):
    """FLOCK_GPU_VIA_MPI=1 stages through pinned memory (scripts/test_gpu.sh also makes
    every fake NCCL op fail then, FAKE_NCCL_FAIL_AFTER=0, so NCCL cannot have been used)."""
    from flock._core_loader import core
    x = DeviceArray.from_numpy(np.ones(256, np.float32), device, stream)
    before = core.gpu_info()
    run_allreduce(x, op="sum", name="which.transport")
    info = core.gpu_info()
    assert info["device"] == device and info["via_mpi"] is VIA_MPI
    staged = info["staged_bytes"] - (before["staged_bytes"] if before else 0)
    assert staged == (2 * x.nbytes if VIA_MPI else 0)


def test_cpu_ops_still_work_alongside(rank, size):
    import torch
    assert bf.allreduce(torch.full((2,), float(rank)), average=False).tolist() == \
        [float(sum(range(size)))] * 2
