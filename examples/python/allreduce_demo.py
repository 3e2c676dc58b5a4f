"""A first flock job: every rank holds a different vector, and allreduce,
broadcast and allgather make them agree. Each rank checks its result against
the value it can compute by itself and rank 0 prints a summary.

    flockrun -np 4 python examples/python/allreduce_demo.py
"""

import argparse
import time

import torch

import flock.torch as bf


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1 << 20, help="vector length")
    parser.add_argument("--repeats", type=int, default=20, help="timed allreduce calls")
    args = parser.parse_args()

    bf.init()
    rank, size = bf.rank(), bf.size()
    x = torch.full((args.elements,), float(rank))

    mean = bf.allreduce(x)  # average over ranks, Bluefog's default
    assert torch.allclose(mean, torch.full_like(x, (size - 1) / 2))
    largest = bf.allreduce(x, op="max")
    assert torch.equal(largest, torch.full_like(x, size - 1.0))
    from_last = bf.broadcast(x, root_rank=size - 1)
    assert torch.equal(from_last, torch.full_like(x, size - 1.0))
    gathered = bf.allgather(torch.tensor([rank, rank * rank]))
    assert gathered.tolist() == [v for r in range(size) for v in (r, r * r)]

    bf.barrier()
    start = time.perf_counter()
    for i in range(args.repeats):
        bf.allreduce_(x, op="sum", name="demo")
    seconds = (time.perf_counter() - start) / args.repeats
    if rank == 0:
        megabytes = x.numel() * 4 / 1e6
        print("flock demo on {} rank(s), {} machine(s): allreduce, broadcast and allgather "
              "agree with the expected values".format(size, bf.machine_size()))
        print("allreduce of {:.1f} MB: {:.2f} ms per call ({:.0f} MB/s algorithm bandwidth)".format(
            megabytes, seconds * 1e3, megabytes / seconds))


if __name__ == "__main__":
    main()
