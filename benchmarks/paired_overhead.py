"""flock's overhead over raw MPI, measured in pairs inside one process.

run_allreduce.py compares separate programs run seconds apart; on a shared
machine (and more so with more ranks than cores) a busy spell can land on one of
them (run_neighbor.py pairs flock with this neighbor floor inside bench_neighbor.py).
Here one flock process calls, on the same torch buffers and alternating iteration
by iteration:

  --op allreduce (default)
    mpi    MPI_Allreduce(MPI_IN_PLACE, float32, MPI_SUM) through ctypes, on the
           calling thread
    flock  bf.allreduce_(t, op="sum")
  --op neighbor_allreduce (the static topology, ExponentialGraph after init)
    mpi    the floor of raw_mpi_neighbor.cc through ctypes: MPI_Irecv from every
           in-neighbour into its own preallocated buffer, MPI_Isend to every
           out-neighbour, MPI_Waitall, then out = w*x + sum of w*recv_j in torch
           (w = 1 / (indegree + 1))
    flock  out = bf.neighbor_allreduce(t), out of place, as users call it

so both see the same load. The protocol is otherwise the one of
bench_allreduce.py (barrier before each timed call, max over ranks, median).
Each ctypes call costs about a microsecond of Python more than C would, so
small-size differences to the C floors are slightly understated. The first
warm-up iteration checks that both variants give the same result.
OpenMPI only (it uses OpenMPI's symbol names for MPI_COMM_WORLD and friends).

    flockrun -np 2 python benchmarks/paired_overhead.py [--op OP] [--min-bytes N]
        [--max-bytes N] [--reps N]
"""

import argparse
import json
import statistics
import sys
import time

import torch

import flock.torch as bf
from mpi_floor import MpiFloor, NeighborFloor

VARIANTS = ("mpi", "flock")


def make_runner(mpi, op, nbytes):
    """run(variant) -> the result tensor, for one op on nbytes of float32."""
    name = "paired.{}.{}".format(op, nbytes)
    if op == "allreduce":
        tensor = torch.zeros(nbytes // 4, dtype=torch.float32)

        def run(variant):
            if variant == "flock":
                return bf.allreduce_(tensor, op="sum", name=name)
            mpi.allreduce_(tensor)
            return tensor
        return run
    x = torch.arange(nbytes // 4, dtype=torch.float32) * (bf.rank() + 1)
    floor = NeighborFloor(mpi, x, bf.in_neighbor_ranks(), bf.out_neighbor_ranks())

    def run(variant):
        if variant == "flock":
            return bf.neighbor_allreduce(x, name=name)
        return floor()
    return run


def measure_size(mpi, op, nbytes, reps):
    run = make_runner(mpi, op, nbytes)
    results = {}
    for variant in VARIANTS:  # the first warm-up: both variants agree
        bf.barrier()
        results[variant] = run(variant).clone()
    if op == "neighbor_allreduce" and not torch.allclose(results["mpi"], results["flock"]):
        raise SystemExit("rank {}: neighbor_allreduce differs from the MPI floor at {} bytes"
                         .format(bf.rank(), nbytes))
    for variant in VARIANTS * 2:  # warm-up
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
    parser.add_argument("--op", choices=("allreduce", "neighbor_allreduce"), default="allreduce")
    parser.add_argument("--min-bytes", type=int, default=4 << 10)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--reps", type=int, default=0, help="default: 100 below 4 MiB, else 30")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    bf.init()
    mpi = MpiFloor()
    rows = []
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        reps = args.reps or (100 if nbytes < (4 << 20) else 30)
        med = measure_size(mpi, args.op, nbytes, reps)
        if bf.rank() == 0:
            print(json.dumps({"op": args.op, "np": bf.size(), "bytes": nbytes, "reps": reps,
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
