"""Allreduce latency of flock or torch.distributed (gloo) on float32 torch tensors.

The protocol is the one of raw_mpi_allreduce.cc, so the numbers compare:
sizes 4 KiB .. 64 MiB in powers of 4; per size a correctness check, warm-up
iterations, then timed iterations, each one barrier, start clock, one in-place
sum allreduce, stop clock. Each rank's elapsed times are reduced with MAX over
ranks (an iteration takes as long as its slowest rank) and rank 0 prints one
JSON line per size with the median, min and max in milliseconds.

    flockrun -np 2 python benchmarks/bench_allreduce.py --impl flock
    flockrun -np 2 python benchmarks/bench_allreduce.py --impl gloo --port 29511

gloo ranks take their rank and world size from OpenMPI's environment
(OMPI_COMM_WORLD_RANK / _SIZE) and meet over TCP on 127.0.0.1.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

MIN_BYTES = 4 << 10
MAX_BYTES = 64 << 20
LARGE_BYTES = 4 << 20  # from here on: fewer warm-ups and reps


def warmups_for(nbytes):
    return 5 if nbytes < LARGE_BYTES else 3


def reps_for(nbytes, override):
    if override:
        return override
    return 50 if nbytes < LARGE_BYTES else 20


class FlockImpl:
    name = "flock"

    def __init__(self, args):
        import flock.torch as bf
        self.bf = bf
        bf.init()
        self.rank, self.size = bf.rank(), bf.size()

    def allreduce_(self, tensor, name):
        self.bf.allreduce_(tensor, op="sum", name=name)

    def barrier(self):
        self.bf.barrier()

    def max_over_ranks(self, tensor):
        return self.bf.allreduce(tensor, op="max", name="bench.max")

    def shutdown(self):
        self.bf.shutdown()


class GlooImpl:
    name = "gloo"

    def __init__(self, args):
        import torch.distributed as dist
        self.dist = dist
        self.rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        self.size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{}".format(args.port),
                                rank=self.rank, world_size=self.size)

    def allreduce_(self, tensor, name):
        self.dist.all_reduce(tensor)

    def barrier(self):
        self.dist.barrier()

    def max_over_ranks(self, tensor):
        self.dist.all_reduce(tensor, op=self.dist.ReduceOp.MAX)
        return tensor

    def shutdown(self):
        self.dist.destroy_process_group()


def check_sum(impl, tensor, name):
    """Every rank contributes rank + 1; the sum must be size * (size + 1) / 2."""
    tensor.fill_(impl.rank + 1)
    impl.allreduce_(tensor, name)
    want = impl.size * (impl.size + 1) / 2
    if tensor[0].item() != want or tensor[-1].item() != want:
        raise SystemExit("rank {}: wrong allreduce result".format(impl.rank))


def measure_size(impl, nbytes, reps_override):
    tensor = torch.zeros(nbytes // 4, dtype=torch.float32)
    name = "bench.allreduce.{}".format(nbytes)
    check_sum(impl, tensor, name)
    tensor.zero_()  # sums of zeros stay finite
    for _ in range(warmups_for(nbytes)):
        impl.barrier()
        impl.allreduce_(tensor, name)
    reps = reps_for(nbytes, reps_override)
    elapsed = []
    clock = time.perf_counter
    for _ in range(reps):
        impl.barrier()
        start = clock()
        impl.allreduce_(tensor, name)
        elapsed.append(clock() - start)
    slowest = impl.max_over_ranks(torch.tensor(elapsed, dtype=torch.float64)).tolist()
    if impl.rank == 0:
        line = {"impl": impl.name, "np": impl.size, "bytes": nbytes, "reps": reps,
                "median_ms": statistics.median(slowest) * 1e3,
                "min_ms": min(slowest) * 1e3, "max_ms": max(slowest) * 1e3}
        print(json.dumps(line), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("flock", "gloo"), required=True)
    parser.add_argument("--port", type=int, default=29511, help="gloo rendezvous port")
    parser.add_argument("--max-bytes", type=int, default=MAX_BYTES)
    parser.add_argument("--reps", type=int, default=0, help="timed iterations for every size")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # two cores, shared: no intra-op thread pool in the way
    impl = FlockImpl(args) if args.impl == "flock" else GlooImpl(args)
    nbytes = MIN_BYTES
    while nbytes <= args.max_bytes:
        measure_size(impl, nbytes, args.reps)
        nbytes *= 4
    impl.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
