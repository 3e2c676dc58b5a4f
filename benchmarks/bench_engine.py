"""flock side of the engine benchmark (engine_floor.cc is the raw-MPI side),
same protocol: barrier, clock, work, clock; max over ranks; median of the
timed iterations. Cases: 100 float32 tensors of 4 KB submitted nonblocking
then synchronized; one 64 MB allreduce; a 4-byte allreduce (latency).

    flockrun -np 2 python benchmarks/bench_engine.py [--reps N]
"""

import argparse
import json
import statistics
import time

import torch

import flock.torch as bf


def median_of_maxima(work, warmup, reps):
    for _ in range(warmup):
        work()
    maxima = []
    for _ in range(reps):
        bf.barrier()
        start = time.perf_counter()
        work()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        maxima.append(bf.allreduce(elapsed, op="max", name="bench.max").item())
    return statistics.median(maxima) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    bf.init()
    small = [torch.ones(1024) for _ in range(100)]
    names = ["small.{}".format(i) for i in range(100)]

    def many_small():
        handles = [bf.allreduce_nonblocking_(t, name=n, op="sum") for t, n in zip(small, names)]
        for h in handles:
            bf.synchronize(h)

    large = torch.ones(16 << 20)
    one = torch.ones(1)
    before = bf.engine_counters()
    result = {
        "impl": "flock",
        "many_small_ms": median_of_maxima(many_small, 3, args.reps),
        "one_large_ms": median_of_maxima(lambda: bf.allreduce_(large, op="sum", name="large"), 2,
                                         max(args.reps // 2, 20)),
        "latency_ms": median_of_maxima(lambda: bf.allreduce_(one, op="sum", name="tiny"), 20,
                                       args.reps * 10),
    }
    after = bf.engine_counters()
    if bf.rank() == 0:
        result["cache_hits"] = after["cache_hits"] - before["cache_hits"]
        result["fused_batches"] = after["fused_batches"] - before["fused_batches"]
        print(json.dumps(result))


if __name__ == "__main__":
    main()
