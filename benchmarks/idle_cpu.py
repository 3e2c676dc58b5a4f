"""CPU used by an idle flock job: every rank initializes flock, does one
allreduce, then sleeps; each rank reports the CPU time its process (all
threads, the engine's included) consumed during the sleep.

    flockrun -np 4 python benchmarks/idle_cpu.py --seconds 10
"""

import argparse
import resource
import time

import torch

import flock.torch as bf


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    bf.init()
    bf.allreduce(torch.ones(1), name="warm")
    start_cpu, start = cpu_seconds(), time.monotonic()
    time.sleep(args.seconds)
    share = (cpu_seconds() - start_cpu) / (time.monotonic() - start)
    shares = bf.allgather(torch.tensor([share * 100], dtype=torch.float64))
    if bf.rank() == 0:
        print("idle CPU per rank over {:.0f} s (% of one core): {}".format(
            args.seconds, ", ".join("{:.2f}".format(s) for s in shares.tolist())))
        print("max {:.2f}% (target < 5%)".format(shares.max().item()))


if __name__ == "__main__":
    main()
