"""CUDA arrays on the fake device, for flock's GPU tests (Debian's torch has no CUDA).

The tests run flock's fake-device package (<build>/fake-python, its module linked
with tests/fake_device's libflock_fake_device.so instead of libcudart and libnccl),
so the CUDA runtime that flock calls is also reachable here through ctypes:
``DeviceArray`` allocates fake device memory and hands flock a DLPack capsule with a
kDLCUDA device, and ``ADAPTER`` lets flock's own collective functions take such arrays
as they take torch tensors.
"""

import ctypes
import os

import numpy as np

_KDL_CUDA = 2
_DL_CODES = {"i": 0, "u": 1, "f": 2}
_H2D, _D2H, _D2D = 1, 2, 3


def _library(path):
    lib = ctypes.CDLL(path)
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.cudaFree.argtypes = [ctypes.c_void_p]
    lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_int, ctypes.c_void_p]
    lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    lib.cudaStreamCreateWithFlags.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    lib.cudaSetDevice.argtypes = [ctypes.c_int]
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    return lib


# The fake runtime (FLOCK_FAKE_DEVICE_LIB, set by scripts/test_gpu.sh); None where only
# the DLPack structures are wanted (tests/python/gpu_real).
CUDA = _library(os.environ["FLOCK_FAKE_DEVICE_LIB"]) if os.environ.get(
    "FLOCK_FAKE_DEVICE_LIB") else None


def check(code, what):
    if code != 0:
        raise RuntimeError("{}: {}".format(what, CUDA.cudaGetErrorString(code).decode()))


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Stream:
    """A non-blocking stream of the fake device (the caller's stream in a test)."""

    def __init__(self, device):
        CUDA.cudaSetDevice(device)
        self.handle = ctypes.c_void_p()
        check(CUDA.cudaStreamCreateWithFlags(ctypes.byref(self.handle), 1), "creating a stream")

    @property
    def value(self):
        return self.handle.value or 0

    def synchronize(self):
        check(CUDA.cudaStreamSynchronize(self.handle), "synchronizing a stream")


class DeviceArray:
    """A contiguous array in fake device memory; copies go through ``stream``."""

    def __init__(self, shape, dtype, device=0, stream=None):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.device = device
        self.stream = stream
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self._keep = []
        self._owner = None  # a view's: what keeps its memory alive
        CUDA.cudaSetDevice(device)
        self.pointer = ctypes.c_void_p()
        check(CUDA.cudaMalloc(ctypes.byref(self.pointer), max(self.nbytes, 1)), "cudaMalloc")

    @classmethod
    def from_capsule(cls, capsule, dtype, stream=None):
        """A view of the device memory of a kDLCUDA capsule flock made (kept alive by it)."""
        managed = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
        tensor = managed.dl_tensor
        if tensor.device.device_type != _KDL_CUDA:
            raise AssertionError("expected a CUDA capsule, got device type {}".format(
                tensor.device.device_type))
        view = cls.__new__(cls)
        view.shape = tuple(int(tensor.shape[i]) for i in range(tensor.ndim))
        view.dtype = np.dtype(dtype)
        view.device = tensor.device.device_id
        view.stream = stream
        view.nbytes = int(np.prod(view.shape, dtype=np.int64)) * view.dtype.itemsize
        view._keep = []
        view._owner = capsule
        view.pointer = ctypes.c_void_p(tensor.data)
        return view

    @classmethod
    def from_numpy(cls, host, device=0, stream=None):
        array = cls(host.shape, host.dtype, device, stream)
        array.upload(host)
        return array

    def _stream_handle(self):
        return self.stream.handle if self.stream is not None else None

    def upload(self, host):
        """Queues host -> device on the array's stream (the host copy is taken at once)."""
        host = np.ascontiguousarray(host, dtype=self.dtype)
        check(CUDA.cudaMemcpyAsync(self.pointer, host.ctypes.data, self.nbytes, _H2D,
                                   self._stream_handle()), "uploading")

    def numpy(self):
        """Device -> host on the array's stream, once the stream reaches it."""
        host = np.empty(self.shape, self.dtype)
        check(CUDA.cudaMemcpyAsync(host.ctypes.data, self.pointer, self.nbytes, _D2H,
                                   self._stream_handle()), "downloading")
        check(CUDA.cudaStreamSynchronize(self._stream_handle()), "synchronizing")
        return host

    def capsule(self):
        """A DLPack capsule (kDLCUDA) over this memory; the array must outlive its use."""
        shape = (ctypes.c_int64 * max(len(self.shape), 1))(*self.shape)
        managed = _DLManagedTensor()
        tensor = managed.dl_tensor
        tensor.data = self.pointer.value
        tensor.device = _DLDevice(_KDL_CUDA, self.device)
        tensor.ndim = len(self.shape)
        code = 4 if self.dtype.name == "bfloat16" else _DL_CODES[self.dtype.kind]
        tensor.dtype = _DLDataType(code, self.dtype.itemsize * 8, 1)
        tensor.shape = shape
        self._keep.append((shape, managed))
        return _capsule_new(ctypes.addressof(managed), b"dltensor", None)

    def __del__(self):
        if getattr(self, "_owner", None) is None and getattr(self, "pointer", None) is not None \
                and self.pointer.value:
            CUDA.cudaFree(self.pointer)


class Adapter:
    """flock._collectives' view of DeviceArrays (as flock.torch's adapter is of tensors)."""

    def __init__(self):
        self.stream = None  # the caller's current stream (None: the default stream)

    def cuda_stream(self, array):
        return self.stream.value if self.stream is not None else 0

    def contiguous(self, array):
        if not isinstance(array, DeviceArray):
            raise TypeError("expected a DeviceArray")
        return array

    def export(self, array):
        return array.capsule(), None

    def empty_like(self, array):
        return DeviceArray(array.shape, array.dtype, array.device, array.stream)

    def empty(self, shape, like):
        return DeviceArray(shape, like.dtype, like.device, like.stream)

    def splits(self, values, like):
        del like
        return np.array(values, dtype=np.int32)

    def copy(self, array):
        out = self.empty_like(array)
        check(CUDA.cudaMemcpyAsync(out.pointer, array.pointer, array.nbytes, _D2D,
                                   array._stream_handle()), "copying")
        return out

    def import_capsule(self, capsule, like):
        return DeviceArray.from_capsule(capsule, like.dtype, like.stream)

    def same_memory(self, a, b):
        return a.pointer.value == b.pointer.value and a.shape == b.shape


ADAPTER = Adapter()
