"""Inputs from outside torch/numpy's CPU world: a CUDA tensor (built by hand as
a DLPack capsule, since this machine has no GPU) and an MPI started by mpi4py."""

import subprocess
import sys
import textwrap

import pytest


def run_python(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60)


def test_cuda_tensor_is_refused_with_the_remedy():
    result = run_python("""
        import ctypes
        import flock
        from flock import _core

        class Device(ctypes.Structure):
            _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

        class DType(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

        class Tensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                        ("dtype", DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

        class Managed(ctypes.Structure):
            _fields_ = [("dl_tensor", Tensor), ("manager_ctx", ctypes.c_void_p),
                        ("deleter", ctypes.c_void_p)]

        shape = (ctypes.c_int64 * 1)(4)
        managed = Managed(Tensor(0x1000, Device(2, 0), 1, DType(2, 32, 1), shape, None, 0), None, None)
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        capsule = new_capsule(ctypes.addressof(managed), b"dltensor", None)

        flock.init()
        try:
            _core.wait(_core.enqueue_allreduce(capsule, None, flock.Sum, "on.gpu"))
        except flock.FlockUnsupportedError as error:
            print(error)
    """)
    assert result.returncode == 0, result.stderr
    assert "cuda:0" in result.stdout and "NCCL" in result.stdout and ".cpu()" in result.stdout


def test_works_when_mpi4py_initialized_mpi_first():
    pytest.importorskip("mpi4py")
    result = run_python("""
        from mpi4py import MPI
        import numpy as np
        import flock.numpy as fnp
        fnp.init()
        assert fnp.size() == MPI.COMM_WORLD.Get_size() == 1
        assert fnp.allreduce(np.array([3.0]), op="sum")[0] == 3.0
        fnp.shutdown()
        MPI.COMM_WORLD.Barrier()  # mpi4py still owns a working MPI
        print("ok")
    """)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr
