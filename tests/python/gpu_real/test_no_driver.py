"""The shipped NCCL build (linked with the real libcudart and libnccl) on a machine
without a GPU driver: it imports, says nccl_built(), runs every CPU op, never
touches CUDA until a CUDA tensor arrives, and then gives that tensor a clear error.

Run by scripts/test_gpu.sh with that build's module first on PYTHONPATH.
"""

import ctypes
import os
import sys

import numpy as np
import pytest
import torch

import flock.errors
import flock.torch as bf

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu"))


def cuda_capsule():
    """A kDLCUDA DLPack capsule over an address no one reads (there is no GPU)."""
    from fake_cuda import _DLDataType, _DLDevice, _DLManagedTensor, _capsule_new
    shape = (ctypes.c_int64 * 1)(4)
    managed = _DLManagedTensor()
    managed.dl_tensor.data = 0x1000
    managed.dl_tensor.device = _DLDevice(2, 0)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = _DLDataType(2, 32, 1)
    managed.dl_tensor.shape = shape
    cuda_capsule.keep = (shape, managed)
    return _capsule_new(ctypes.addressof(managed), b"dltensor", None)


@pytest.fixture(scope="module", autouse=True)
def runtime():
    os.environ["FLOCK_QUIET"] = "1"
    bf.init()
    yield
    bf.shutdown()


def test_the_module_links_the_real_libraries():
    maps = open("/proc/self/maps").read()
    assert "libnccl.so" in maps and "libcudart.so" in maps
    assert "libflock_fake_device" not in maps


def test_nccl_is_built_and_cpu_ops_work():
    from flock._core_loader import core
    assert bf.nccl_built() is True
    assert bf.allreduce(torch.arange(3.0), average=False).tolist() == [0.0, 1.0, 2.0]
    assert bf.broadcast(torch.ones(2), 0).tolist() == [1.0, 1.0]
    assert core.gpu_info() is None  # no CUDA tensor yet: CUDA was never initialised


def test_a_cuda_tensor_gets_a_clear_error():
    from flock._core_loader import core
    handle = core.enqueue_allreduce(cuda_capsule(), None, core.ReduceOp.SUM, "cuda.nodriver")
    with pytest.raises(flock.errors.FlockTransportError) as raised:
        core.wait(handle)
    message = str(raised.value)
    assert "counting the CUDA devices" in message and "driver" in message
    assert "the CPU ops are unaffected" in message
    # ... and they are; the failed start is kept (no retry per tensor).
    assert bf.allreduce(torch.ones(2), average=True).tolist() == [1.0, 1.0]
    assert core.gpu_info() is None
