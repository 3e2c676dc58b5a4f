"""The raw-MPI floors, called through ctypes from inside a flock benchmark process.

A floor run in its own program (raw_mpi_allreduce.cc, raw_mpi_neighbor.cc) is measured
seconds or minutes away from flock; on this shared VM the same program's medians move by
tens of percent between launches. Run here, on the same rank processes and alternating
call by call with flock, the floor and flock see the same load, so their ratio is the
measurement; the separate programs stay the check that these floors are as fast as C.

OpenMPI only: MPI_COMM_WORLD and friends are found by OpenMPI's symbol names. Floors work
on MPI_COMM_WORLD with a tag of their own; flock talks on communicators of its own.
"""

import ctypes
import ctypes.util

import torch

NEIGHBOR_TAG = 4242
MPI_IN_PLACE = 1  # OpenMPI's value


class MpiUnavailable(RuntimeError):
    """The MPI library loaded in this process is not OpenMPI (or not found)."""


def _float32_contiguous(tensor):
    if tensor.dtype != torch.float32 or not tensor.is_contiguous():
        raise ValueError("the MPI floors take contiguous float32 tensors, not {} {}".format(
            tensor.dtype, "contiguous" if tensor.is_contiguous() else "strided"))


class MpiFloor:
    """The handles and calls of OpenMPI's libmpi, already initialized by flock."""

    def __init__(self):
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("mpi") or "libmpi.so.40",
                              mode=ctypes.RTLD_GLOBAL)
            handle = lambda name: ctypes.addressof(ctypes.c_char.in_dll(lib, name))  # noqa: E731
            self.world, self.float32 = handle("ompi_mpi_comm_world"), handle("ompi_mpi_float")
            self.sum = handle("ompi_mpi_op_sum")
        except (OSError, ValueError) as error:
            raise MpiUnavailable("in-process MPI floor needs OpenMPI: {}".format(error))
        lib.MPI_Allreduce.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int] + [ctypes.c_void_p] * 3
        point_to_point = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                          ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        lib.MPI_Irecv.argtypes = point_to_point
        lib.MPI_Isend.argtypes = point_to_point
        lib.MPI_Waitall.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        lib.MPI_Reduce_scatter_block.argtypes = ([ctypes.c_void_p] * 2 + [ctypes.c_int] +
                                                 [ctypes.c_void_p] * 3)
        lib.MPI_Alltoall.argtypes = ([ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p] * 2 +
                                     [ctypes.c_void_p])
        self.lib = lib

    def allreduce_(self, tensor):
        """MPI_Allreduce(MPI_IN_PLACE) of a float32 tensor, summing."""
        _float32_contiguous(tensor)
        self.lib.MPI_Allreduce(ctypes.c_void_p(MPI_IN_PLACE), tensor.data_ptr(), tensor.numel(),
                               self.float32, self.sum, self.world)
        return tensor

    def reduce_scatter_block(self, tensor, out):
        """MPI_Reduce_scatter_block of a float32 tensor into ``out`` (its block), summing."""
        _float32_contiguous(tensor)
        _float32_contiguous(out)
        self.lib.MPI_Reduce_scatter_block(tensor.data_ptr(), out.data_ptr(), out.numel(),
                                          self.float32, self.sum, self.world)
        return out

    def alltoall(self, tensor, out, size):
        """MPI_Alltoall of a float32 tensor split evenly between ``size`` ranks."""
        _float32_contiguous(tensor)
        _float32_contiguous(out)
        block = tensor.numel() // size
        self.lib.MPI_Alltoall(tensor.data_ptr(), block, self.float32, out.data_ptr(), block,
                              self.float32, self.world)
        return out


class NeighborFloor:
    """raw_mpi_neighbor.cc's Isend/Irecv floor for fixed neighbours, on one float32 tensor x
    or on a list of them: MPI_Irecv from every source into a preallocated buffer per tensor,
    MPI_Isend to every destination (tensor i on tag NEIGHBOR_TAG + i), one MPI_Waitall,
    then out = w*x + sum of w*received[j], w = 1/(sources + 1), in place in preallocated
    outputs (no temporaries). The list form is what many tensors cost MPI itself."""

    def __init__(self, mpi, x, sources, destinations):
        self.single = not isinstance(x, (list, tuple))
        self.xs = [x] if self.single else list(x)
        for tensor in self.xs:
            _float32_contiguous(tensor)
        self.mpi = mpi
        self.sources, self.destinations = list(sources), list(destinations)
        self.outs = [torch.empty_like(tensor) for tensor in self.xs]
        self.received = [[torch.empty_like(tensor) for _ in self.sources] for tensor in self.xs]
        per_tensor = len(self.sources) + len(self.destinations)
        self.requests = (ctypes.c_void_p * (per_tensor * len(self.xs)))()
        self.weight = 1.0 / (len(self.sources) + 1)

    def __call__(self):
        lib, mpi = self.mpi.lib, self.mpi
        slot, posted = ctypes.sizeof(ctypes.c_void_p), 0
        for i, (x, received) in enumerate(zip(self.xs, self.received)):
            for buffer, source in zip(received, self.sources):
                lib.MPI_Irecv(buffer.data_ptr(), x.numel(), mpi.float32, source, NEIGHBOR_TAG + i,
                              mpi.world, ctypes.byref(self.requests, posted * slot))
                posted += 1
        for i, x in enumerate(self.xs):
            for destination in self.destinations:
                lib.MPI_Isend(x.data_ptr(), x.numel(), mpi.float32, destination, NEIGHBOR_TAG + i,
                              mpi.world, ctypes.byref(self.requests, posted * slot))
                posted += 1
        lib.MPI_Waitall(posted, self.requests, None)  # NULL: MPI_STATUSES_IGNORE
        for x, out, received in zip(self.xs, self.outs, self.received):
            torch.mul(x, self.weight, out=out)
            for buffer in received:
                out.add_(buffer, alpha=self.weight)
        return self.outs[0] if self.single else self.outs
