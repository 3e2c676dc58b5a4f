"""Raw-MPI floor of the scaling benchmark's cross-host traffic for the hierarchical
one-peer schedule: what the links allow, with no compute and no flock.

Each rank sends its half of every gradient (the model's tensors in backward order; each
rank of a machine carries one half of the machine mean) to the same local rank of the
machine 2^k machines on, and receives the same from the one 2^k before, k rotating as
in the schedule, with one Isend/Irecv per tensor and one Waitall (mpi4py, from Debian).
Prints the mean and median over the timed steps of the slowest rank's time.

    python3 tools/cluster run --hosts 4 --rate 1gbit -- flockrun -np 8 \\
        -H h1:2,h2:2,h3:2,h4:2 python benchmarks/scaling_mpi_floor.py resnet50 fp32
"""

import argparse
import statistics
import time

import numpy as np
import torchvision
from mpi4py import MPI

LOCAL_RANKS = 2


def halves_of_gradients(model, dtype, rank):
    sizes = [p.numel() for p in getattr(torchvision.models, model)().parameters()][::-1]
    first = rank % LOCAL_RANKS == 0
    return [np.ones((n + 1) // 2 if first else n // 2, dtype=dtype) for n in sizes]


def one_step(comm, sends, receives, shift):
    rank, machines = comm.Get_rank(), comm.Get_size() // LOCAL_RANKS
    me, local = rank // LOCAL_RANKS, rank % LOCAL_RANKS
    dst = ((me + shift) % machines) * LOCAL_RANKS + local
    src = ((me - shift) % machines) * LOCAL_RANKS + local
    comm.Barrier()
    start = time.perf_counter()
    requests = []
    for tag, (send, receive) in enumerate(zip(sends, receives)):
        requests.append(comm.Irecv(receive, source=src, tag=tag))
        requests.append(comm.Isend(send, dest=dst, tag=tag))
    MPI.Request.Waitall(requests)
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=("resnet50", "mobilenet_v2"))
    parser.add_argument("precision", choices=("fp32", "fp16"))
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    dtype = np.uint16 if args.precision == "fp16" else np.float32  # fp16: its 2 bytes
    sends = halves_of_gradients(args.model, dtype, comm.Get_rank())
    receives = [np.empty_like(s) for s in sends]
    periods = max(1, (comm.Get_size() // LOCAL_RANKS - 1).bit_length())
    times = [one_step(comm, sends, receives, 2 ** (k % periods))
             for k in range(args.warmup + args.steps)][args.warmup:]
    if comm.Get_rank() == 0:
        print("{} {}: cross-host one-peer exchange, mean {:.3f} s, median {:.3f} s".format(
            args.model, args.precision, statistics.mean(times), statistics.median(times)))


if __name__ == "__main__":
    main()
