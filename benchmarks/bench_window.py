"""Window ops: one round of win_put to every out-neighbour then win_update, against the
in-process Isend/Irecv floor of the same bytes to the same neighbours (with its weighted
sum, mpi_floor.NeighborFloor) and flock's own neighbor_allreduce, alternating call by
call (bench_neighbor.Bench's protocol: barrier, clock, round, clock; slowest rank;
median after warm-up). Float32 on the static ExponentialGraph.

--straggler: every rank "computes" --compute-ms per step (sleep, no flock call), the last
rank twice that; each step then gossips --straggler-bytes: asynchronously (win_put to
every out-neighbour, then win_update) or synchronously (neighbor_allreduce). Reports the
other ranks' steps/s over --seconds, against the same run with nobody slow.

    flockrun -np 4 python benchmarks/bench_window.py [--sizes 4096,1048576,16777216]
        [--reps N] [--straggler] [--seconds S]
Prints one JSON line per case on rank 0.
"""

import argparse
import json
import statistics
import sys
import time

import torch

from bench_neighbor import FLOOR, Bench, input_tensor


def rounds(bench, nbytes):
    bf = bench.bf
    x = input_tensor(bench.rank, nbytes // 4)
    t = x.clone()
    name = "bench.window.{}".format(nbytes)
    bf.win_create(x, name)

    def put_update():
        bf.win_put(x, name)
        return bf.win_update(name)

    works = {"flock_win_put_update": (put_update, lambda out: None),
             "flock_neighbor_allreduce": (
                 lambda: bf.neighbor_allreduce(t, name=name + ".nar"),
                 lambda out: bench.check_average(out, "flock_neighbor_allreduce"))}
    works.update(bench.floor_case(t))
    for impl, slowest in bench.measure(nbytes, works).items():
        bench.report(impl, "sizes", nbytes, 1, slowest)
    bf.win_free(name)


def steps_per_second(bench, mode, slow, compute_s, seconds, nbytes):
    """This rank's steps/s over `seconds` of compute-then-gossip steps."""
    bf = bench.bf
    x = input_tensor(bench.rank, nbytes // 4)
    name = "bench.straggler.{}.{}".format(mode, int(slow))
    if mode == "async":
        bf.win_create(x, name)
    delay = compute_s * (2 if slow and bench.rank == bench.size - 1 else 1)
    bf.barrier()
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        time.sleep(delay)
        if mode == "async":
            bf.win_put(x, name)
            bf.win_update(name)
        else:
            x = bf.neighbor_allreduce(x, name=name)
        steps += 1
    rate = steps / (time.perf_counter() - start)
    bf.barrier()
    if mode == "async":
        bf.win_free(name)
    return rate


def straggler(bench, args):
    bf = bench.bf
    results = {}
    for mode in ("async", "sync"):
        for slow in (False, True):
            rate = steps_per_second(bench, mode, slow, args.compute_ms / 1e3, args.seconds,
                                    args.straggler_bytes)
            rates = bf.allgather(torch.tensor([[rate]], dtype=torch.float64),
                                 name="bench.rates").reshape(-1).tolist()
            results[(mode, slow)] = rates
    if bench.rank != 0:
        return
    for mode in ("async", "sync"):
        base, slow = results[(mode, False)], results[(mode, True)]
        others = range(bench.size - 1)
        kept = statistics.mean(slow[r] / base[r] for r in others)
        print(json.dumps({"case": "straggler", "mode": mode, "np": bench.size,
                          "bytes": args.straggler_bytes, "compute_ms": args.compute_ms,
                          "steps_per_s_nobody_slow": [round(v, 2) for v in base],
                          "steps_per_s_last_rank_slow": [round(v, 2) for v in slow],
                          "others_kept": round(kept, 3)}), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,1048576,16777216")
    parser.add_argument("--reps", type=int, default=0)
    parser.add_argument("--straggler", action="store_true")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--compute-ms", type=float, default=10.0)
    parser.add_argument("--straggler-bytes", type=int, default=1 << 20)
    parser.add_argument("--no-inprocess-floor", dest="floor", action="store_false")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    bench = Bench(args.reps, args.floor)
    if args.straggler:
        straggler(bench, args)
    else:
        bench.settle()
        for nbytes in (int(s) for s in args.sizes.split(",")):
            rounds(bench, nbytes)
    bench.shutdown()


if __name__ == "__main__":
    sys.exit(main())
