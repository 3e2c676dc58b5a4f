"""Where a small op's time goes: wall time and CPU time per call, flock against MPI.

    flockrun -np N python benchmarks/fixed_cost.py [--op allreduce|neighbor_allreduce]
        [--sizes 4096 1048576] [--blocks 6]

In one process per rank (mpi_floor.py says why), blocks of calls alternate between
flock's blocking ``allreduce_(t, op="sum")`` and ``MPI_Allreduce(MPI_IN_PLACE)``
through ctypes on another tensor of the same size — or, with ``--op
neighbor_allreduce``, flock's ``neighbor_allreduce(t)`` over the default topology
(ExponentialGraph) and mpi_floor.NeighborFloor (Isend/Irecv, Waitall, the weighted sum). Per block, each rank reads
getrusage before and after: wall time, CPU time (user + system) and context switches
per call. Rank 0 prints, per size and rank, the medians over the blocks after the
first, and the wall-time ratio.

What it shows: with more ranks than cores every rank is always runnable (a waiting
rank polls, yielding its core at each poll), so the wall time of a call is the CPU
time all ranks spend on it divided by the cores — and a call costs what its hand-overs
cost. At np 1 (no communication at all) the table is flock's own cost per call: the
Python wrapper, DLPack, the engine's round with itself.
"""

import argparse
import resource
import statistics
import time

import torch

import flock.torch as bf
from mpi_floor import MpiFloor, NeighborFloor


def per_call(fn, calls):
    """(wall µs, CPU µs, context switches) per call of fn over ``calls`` calls."""
    bf.barrier()
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    wall = (time.perf_counter() - start) / calls * 1e6
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / calls * 1e6
    switches = (after.ru_nvcsw - before.ru_nvcsw + after.ru_nivcsw - before.ru_nivcsw) / calls
    return wall, cpu, switches


def calls_of(op, mpi, numel):
    """(flock's call, the floor's call) for ``op`` on tensors of ``numel`` floats."""
    x, y = torch.ones(numel), torch.ones(numel)
    if op == "allreduce":
        return (lambda: bf.allreduce_(x, op="sum", name="fixed_cost"),
                lambda: mpi.allreduce_(y))
    floor = NeighborFloor(mpi, y, bf.in_neighbor_ranks(), bf.out_neighbor_ranks())
    return lambda: bf.neighbor_allreduce(x, name="fixed_cost"), floor


def measure(op, mpi, numel, blocks):
    """This rank's medians: [flock wall, cpu, switches, MPI wall, cpu, switches]."""
    ours, theirs = calls_of(op, mpi, numel)
    calls = max(20, 2_000_000 // max(numel, 1000))
    flock, raw = [], []
    for _ in range(blocks):
        flock.append(per_call(ours, calls))
        raw.append(per_call(theirs, calls))
    return _medians(flock) + _medians(raw)


def _medians(rows):
    """Per column, the median over the blocks after the first (a warm-up)."""
    return [statistics.median(r[i] for r in rows[1:]) for i in range(3)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 1 << 20],
                        help="bytes per call (float32)")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--op", choices=("allreduce", "neighbor_allreduce"), default="allreduce")
    args = parser.parse_args()
    bf.init()
    mpi = MpiFloor()
    for nbytes in args.sizes:
        row = torch.tensor([measure(args.op, mpi, max(1, nbytes // 4), args.blocks)],
                           dtype=torch.float64)
        every = bf.allgather(row, name="fixed_cost.rows").tolist()
        if bf.rank() != 0:
            continue
        for rank, r in enumerate(every):
            print(args.op + " np {} {:>8} B rank {}: flock wall {:7.1f} cpu {:7.1f} switches {:4.1f} | "
                  "MPI wall {:7.1f} cpu {:7.1f} switches {:4.1f} | wall ratio {:.2f}".format(
                      bf.size(), nbytes, rank, *r, r[0] / r[3]), flush=True)
    bf.shutdown()


if __name__ == "__main__":
    main()
