"""Per-call time of small and 1 MiB ops, for paired comparisons of two builds.

    flockrun -np 4 python benchmarks/per_call_us.py            # prints "<op> <us>" lines

Rank 0 prints the median over 7 timed blocks (after a warm-up) of: allreduce, static and
dynamic neighbor_allreduce of 16 floats; allreduce and static neighbor_allreduce of
1 MiB; hierarchical_neighbor_allreduce of 1 MiB when the world splits into machines
(FLOCK_LOCAL_SIZE). To compare builds, run each build's flockrun alternately, several
rounds, and take the median of the per-round ratios (docs/performance/hardening.md).
"""

import statistics
import time

import torch

import flock.torch as bf

BLOCKS = 7


def timed(label, call, reps):
    for _ in range(max(1, reps // 5)):
        call()
    times = []
    for _ in range(BLOCKS):
        bf.barrier()
        start = time.perf_counter()
        for _ in range(reps):
            call()
        times.append((time.perf_counter() - start) / reps * 1e6)
    if bf.rank() == 0:
        print(label, round(statistics.median(times), 2), flush=True)


def main():
    bf.init()
    rank, size = bf.rank(), bf.size()
    bf.set_topology(bf.ExponentialGraph(size))
    small, big = torch.ones(16), torch.ones(1 << 18)
    timed("allreduce_16", lambda: bf.allreduce(small, name="a"), 1000)
    timed("neighbor_16", lambda: bf.neighbor_allreduce(small, name="s"), 1000)
    timed("dynamic_16", lambda: bf.neighbor_allreduce(
        small, self_weight=0.5, src_weights={(rank - 1) % size: 0.5},
        dst_weights=[(rank + 1) % size], name="d"), 1000)
    timed("allreduce_1MiB", lambda: bf.allreduce(big, name="A"), 100)
    timed("neighbor_1MiB", lambda: bf.neighbor_allreduce(big, name="S"), 200)
    machines = size // bf.local_size()
    if machines > 1:
        bf.set_machine_topology(bf.RingGraph(machines))
        timed("hierarchical_1MiB", lambda: bf.hierarchical_neighbor_allreduce(big, name="H"), 100)
    bf.shutdown()


if __name__ == "__main__":
    main()
