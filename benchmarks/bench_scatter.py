"""reducescatter and alltoall against MPI's own calls, and the two-phase gradient path.

    flockrun -np 4 python benchmarks/bench_scatter.py [--sizes 4096 1048576] [--iters 30]

For each size (bytes of each rank's float32 input), in one process per rank and
alternating call by call (mpi_floor.py says why): flock's blocking reducescatter
against MPI_Reduce_scatter_block, flock's alltoall against MPI_Alltoall (even
splits), and flock's allreduce against a reducescatter followed by an allgather of the
blocks (the "reducescatter-based gradient path": worth it only where it is faster).
Rank 0 prints a Markdown table of per-call medians (slowest rank) after --warmup
calls, and the ratios.
"""

import argparse
import statistics
import time

import torch

import flock.torch as bf
from mpi_floor import MpiFloor

PAIRS = ("reducescatter", "alltoall", "two-phase")


def timed(fn):
    bf.barrier()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def calls(mpi, size, numel):
    """For each pair: (flock's call, the one it is held against)."""
    x = torch.ones(numel)
    block = torch.empty(numel // size)
    out = torch.empty(numel)
    return {
        "reducescatter": (lambda: bf.reducescatter(x, op="sum", name="rs"),
                          lambda: mpi.reduce_scatter_block(x, block)),
        "alltoall": (lambda: bf.alltoall(x, name="a2a"),
                     lambda: mpi.alltoall(x, out, size)),
        "two-phase": (lambda: bf.allgather(bf.reducescatter(x, op="sum", name="tp.rs"),
                                           name="tp.ag"),
                      lambda: bf.allreduce(x, op="sum", name="ar")),
    }


def measure(mpi, size, numel, warmup, iters):
    """{pair: (flock median, reference median)} in seconds, slowest rank."""
    result = {}
    for pair, (ours, theirs) in calls(mpi, size, numel).items():
        times = ([], [])
        for i in range(warmup + iters):
            for which, fn in enumerate((ours, theirs)):
                t = timed(fn)
                if i >= warmup:
                    times[which].append(t)
        medians = torch.tensor([statistics.median(times[0]), statistics.median(times[1])],
                               dtype=torch.float64)
        worst = bf.allreduce(medians, op="max", name="median." + pair)
        result[pair] = tuple(worst.tolist())
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 1 << 20, 16 << 20])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args()
    bf.init()
    size, mpi = bf.size(), MpiFloor()
    rows = []
    for nbytes in args.sizes:
        numel = max(size, nbytes // 4 // size * size)  # divisible by size: MPI's even calls
        rows.append((nbytes, measure(mpi, size, numel, args.warmup, args.iters)))
    if bf.rank() == 0:
        print("np {}: per-call medians (slowest rank), us".format(size))
        print("| bytes | reducescatter | MPI_Reduce_scatter_block | ratio | alltoall | "
              "MPI_Alltoall | ratio | rs + allgather | allreduce | ratio |")
        print("|---:" * 10 + "|")
        for nbytes, r in rows:
            cells = []
            for pair in PAIRS:
                ours, theirs = r[pair]
                cells += ["{:.0f}".format(ours * 1e6), "{:.0f}".format(theirs * 1e6),
                          "{:.2f}".format(ours / theirs)]
            print("| {} | {} |".format(nbytes, " | ".join(cells)))
    bf.shutdown()


if __name__ == "__main__":
    main()
