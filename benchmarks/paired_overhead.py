"""flock's allreduce overhead over MPI_Allreduce, measured in pairs inside one process.

run_allreduce.py compares separate programs run seconds apart; on a shared
machine a busy spell can land on one of them. Here one flock process calls,
on the same torch buffer and alternating iteration by iteration:

  mpi    MPI_Allreduce(MPI_IN_PLACE, float32, MPI_SUM) through ctypes, on the
         calling thread
  flock  bf.allreduce_(t, op="sum"), which flock's engine thread carries out

so both see the same load. The protocol is otherwise the one of
bench_allreduce.py (barrier before each timed call, max over ranks, median).
The ctypes call itself costs about a microsecond of Python more than C would,
so small-size differences to raw_mpi_allreduce.cc are slightly understated.
OpenMPI only (it uses OpenMPI's symbol names for MPI_COMM_WORLD and friends).

    flockrun -np 2 python benchmarks/paired_overhead.py [--max-bytes N] [--reps N]
"""

import argparse
import ctypes
import ctypes.util
import json
import statistics
import sys
import time

import torch

import flock.torch as bf

VARIANTS = ("mpi", "flock")


class Mpi:
    """The few OpenMPI calls needed, through ctypes, on MPI_COMM_WORLD."""

    def __init__(self):
        lib = ctypes.CDLL(ctypes.util.find_library("mpi") or "libmpi.so.40",
                          mode=ctypes.RTLD_GLOBAL)
        handle = lambda name: ctypes.addressof(ctypes.c_char.in_dll(lib, name))  # noqa: E731
        self.world, self.float32 = handle("ompi_mpi_comm_world"), handle("ompi_mpi_float")
        self.sum = handle("ompi_mpi_op_sum")
        lib.MPI_Allreduce.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int] + [ctypes.c_void_p] * 3
        self.lib = lib

    def allreduce_(self, tensor):
        in_place = ctypes.c_void_p(1)  # OpenMPI's MPI_IN_PLACE
        self.lib.MPI_Allreduce(in_place, tensor.data_ptr(), tensor.numel(), self.float32,
                               self.sum, self.world)


def measure_size(mpi, nbytes, reps):
    tensor = torch.zeros(nbytes // 4, dtype=torch.float32)
    name = "paired.{}".format(nbytes)

    def run(variant):
        if variant == "flock":
            bf.allreduce_(tensor, op="sum", name=name)
        else:
            mpi.allreduce_(tensor)

    for variant in VARIANTS * 3:  # warm-up
        bf.barrier()
        run(variant)
    elapsed = {variant: [] for variant in VARIANTS}
    clock = time.perf_counter
    for i in range(reps):
        for k in range(len(VARIANTS)):
            variant = VARIANTS[(i + k) % len(VARIANTS)]  # rotate who goes first
            bf.barrier()
            start = clock()
            run(variant)
            elapsed[variant].append(clock() - start)
    times = torch.tensor([elapsed[v] for v in VARIANTS], dtype=torch.float64)
    slowest = bf.allreduce(times, op="max", name="paired.max").tolist()
    return {v: statistics.median(s) * 1e3 for v, s in zip(VARIANTS, slowest)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--reps", type=int, default=0, help="default: 100 below 4 MiB, else 30")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    mpi = Mpi()
    rows = []
    nbytes = 4 << 10
    while nbytes <= args.max_bytes:
        reps = args.reps or (100 if nbytes < (4 << 20) else 30)
        med = measure_size(mpi, nbytes, reps)
        if bf.rank() == 0:
            print(json.dumps({"np": bf.size(), "bytes": nbytes, "reps": reps,
                              **{v + "_ms": m for v, m in med.items()}}), flush=True)
        rows.append((nbytes, med))
        nbytes *= 4
    if bf.rank() == 0:
        print("\n| size | MPI (ms) | flock (ms) | flock/MPI | flock − MPI (µs) |\n"
              "| ---: | ---: | ---: | ---: | ---: |")
        for nbytes, med in rows:
            size = ("{} MiB".format(nbytes >> 20) if nbytes >= 1 << 20
                    else "{} KiB".format(nbytes >> 10))
            print("| {} | {:.3f} | {:.3f} | {:.2f} | {:.1f} |".format(
                size, med["mpi"], med["flock"], med["flock"] / med["mpi"],
                (med["flock"] - med["mpi"]) * 1e3))
    bf.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
