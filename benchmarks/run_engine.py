"""Runs the engine benchmark: raw MPI (engine_floor) and flock (bench_engine.py),
alternating, --rounds times per world size; prints a markdown table of the
medians over rounds and the ratios flock/raw, with the issue's targets.

    PATH=$PWD/.venv/bin:$PATH python benchmarks/run_engine.py [--np 2 4] [--rounds 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = [("many_small_ms", "100 × 4 KB nonblocking vs 100 blocking", 0.3),
         ("one_large_ms", "one 64 MB allreduce", 1.10),
         ("latency_ms", "4-byte allreduce latency", None)]


def run(np, command, mpi_args, timeout=600):
    extra = ["--mpi-args", mpi_args] if mpi_args else []
    out = subprocess.run(["flockrun", "-np", str(np)] + extra + command, capture_output=True,
                         text=True, timeout=timeout, check=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--np", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--mpi-args", default="",
                        help='extra mpirun arguments for both sides, e.g. "--mca btl self,tcp"')
    parser.add_argument("--raw-bin", default=os.path.join(ROOT, "build", "benchmarks", "engine_floor"))
    args = parser.parse_args()
    print("Engine benchmark: median over {} alternating rounds of per-run medians "
          "(each: max over ranks per iteration, median over {} iterations after warm-up)\n"
          .format(args.rounds, args.reps))
    for np in args.np:
        raw, flock = [], []
        for _ in range(args.rounds):
            raw.append(run(np, [args.raw_bin, "--reps", str(args.reps)], args.mpi_args))
            flock.append(run(np, [sys.executable, os.path.join(HERE, "bench_engine.py"),
                                  "--reps", str(args.reps)], args.mpi_args))
        print("np {}{}\n".format(np, " with mpirun " + args.mpi_args if args.mpi_args else ""))
        print("| case | raw MPI (ms) | flock (ms) | flock/raw | target |")
        print("| --- | ---: | ---: | ---: | --- |")
        for key, label, target in CASES:
            r = statistics.median(x[key] for x in raw)
            f = statistics.median(x[key] for x in flock)
            verdict = "reported" if target is None else ("≤ {} {}".format(
                target, "met" if f / r <= target else "NOT met"))
            print("| {} | {:.3f} | {:.3f} | {:.2f} | {} |".format(label, r, f, f / r, verdict))
        print()


if __name__ == "__main__":
    main()
