"""Runs the allreduce benchmark (raw MPI, flock, gloo) and prints markdown tables.

For each world size, the implementations run one after another under
flockrun (so with the same mpirun flags), and this is repeated --rounds times
with the order rotated each round (raw, flock, gloo, ...; flock, gloo, ...,
raw; ...), so a slow spell on this shared machine does not land on one
implementation only. Each run reports, per size, the median over timed
iterations of the slowest rank's time; the table shows the median of those
per-run medians, and the ratios are taken between those numbers from this one
invocation. A fourth run per round, flock again with its timeline recorded
(flockrun --timeline-filename), splits flock's time into the engine's phases
(queued, negotiating, communicate) and the time outside the engine (Python,
handing the request to the engine thread and waking the caller); the phase
columns are per-rank medians over the timed calls, max over ranks
(--no-breakdown skips that run).

    PATH=$PWD/.venv/bin:$PATH python benchmarks/run_allreduce.py [--np 2 4] [--rounds 5]

Needs build/benchmarks/raw_mpi_allreduce (cmake --build build --target
raw_mpi_allreduce) and flock installed in the Python that runs this script.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from timeline_phases import phase_durations

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
IMPLS = ("raw_mpi", "flock", "gloo")
# flock once more, recording its timeline, to see where its time goes (the
# recording itself costs a little, so the main table uses the plain run).
TIMELINE = "flock+timeline"
OP_SPAN, PHASES = "allreduce", ("QUEUED", "NEGOTIATING", "COMMUNICATE")
TARGET_RATIO = 1.10
TARGET_FROM_BYTES = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command_for(impl, args):
    extra = ["--max-bytes", str(args.max_bytes)] + (["--reps", str(args.reps)] if args.reps else [])
    if impl == "raw_mpi":
        return [args.raw_bin] + extra
    script = os.path.join(HERE, "bench_allreduce.py")
    cmd = [sys.executable, script, "--impl", "gloo" if impl == "gloo" else "flock"] + extra
    return cmd + (["--port", str(free_port())] if impl == "gloo" else [])


def timeline_phases(path, lines):
    """{span: {bytes: µs}}: per size and span, the median over timed calls, max over ranks."""
    per_rank = phase_durations(path)
    out = {}
    for line in lines:
        name = "bench.allreduce.{}".format(line["bytes"])
        for span in (OP_SPAN,) + PHASES:
            medians = [statistics.median(rank[name][span][-line["reps"]:]) for rank in per_rank
                       if span in rank.get(name, {})]
            if medians:
                out.setdefault(span, {})[line["bytes"]] = max(medians)
    return out


def run_once(impl, nproc, args, timeline_path):
    """One flockrun: {impl or span: {bytes: ms or µs}}, or {} on failure."""
    flockrun = [args.flockrun, "-np", str(nproc)] + args.mpi_args
    if impl == TIMELINE:
        flockrun += ["--timeline-filename", timeline_path]
    start = time.monotonic()
    try:
        done = subprocess.run(flockrun + command_for(impl, args), capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print("  {} np={}: timed out after {} s".format(impl, nproc, args.timeout), file=sys.stderr)
        return {}
    lines = [json.loads(l) for l in done.stdout.splitlines() if l.startswith("{")]
    if args.save:
        with open(args.save, "a") as out:
            for line in lines:
                out.write(json.dumps(dict(line, impl=impl)) + "\n")
    print("  {:14s} np={} rc={} {:.1f} s".format(impl, nproc, done.returncode,
                                                   time.monotonic() - start), file=sys.stderr)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return {}
    result = {impl: {line["bytes"]: line["median_ms"] for line in lines}}
    if impl == TIMELINE:
        try:
            result.update(timeline_phases(timeline_path, lines))
        except (OSError, ValueError, KeyError) as error:
            print("  timeline not read: {}".format(error), file=sys.stderr)
    return result


def measure(nproc, args, scratch):
    """{impl or span: {bytes: [one value per round]}}, rounds interleaved and rotated."""
    impls = IMPLS + ((TIMELINE,) if args.breakdown else ())
    results = {}
    for r in range(args.rounds):
        order = impls[r % len(impls):] + impls[:r % len(impls)]
        print("np={} round {}/{}: {}".format(nproc, r + 1, args.rounds, ", ".join(order)),
              file=sys.stderr)
        for impl in order:
            path = os.path.join(scratch, "timeline-np{}-round{}.json".format(nproc, r))
            for key, values in run_once(impl, nproc, args, path).items():
                for nbytes, value in values.items():
                    results.setdefault(key, {}).setdefault(nbytes, []).append(value)
    return results


def size_name(nbytes):
    return "{} MiB".format(nbytes >> 20) if nbytes >= 1 << 20 else "{} KiB".format(nbytes >> 10)


def fmt(value, digits=3):
    return "–" if value is None else "{:.{}f}".format(value, digits)


def ratio(a, b):
    return None if a is None or b is None else a / b


def table(nproc, results):
    """Markdown lines and {size: flock/raw} for the sizes the target covers."""
    lines = ["### np = {}".format(nproc), "",
             "| size | raw MPI (ms) | flock (ms) | gloo (ms) | flock/raw | flock/gloo "
             "| flock/raw per round (min–max) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    covered = {}
    sizes = sorted(set().union(*(results.get(impl, {}).keys() for impl in IMPLS)))
    for nbytes in sizes:
        runs = {impl: results.get(impl, {}).get(nbytes, []) for impl in IMPLS}
        med = {impl: statistics.median(v) if v else None for impl, v in runs.items()}
        per_round = [f / r for f, r in zip(runs["flock"], runs["raw_mpi"])]
        spread = "{:.2f}–{:.2f}".format(min(per_round), max(per_round)) if per_round else "–"
        fr = ratio(med["flock"], med["raw_mpi"])
        lines.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            size_name(nbytes), fmt(med["raw_mpi"]), fmt(med["flock"]), fmt(med["gloo"]),
            fmt(fr, 2), fmt(ratio(med["flock"], med["gloo"]), 2), spread))
        if nbytes >= TARGET_FROM_BYTES and fr is not None:
            covered[nbytes] = fr
    return lines, covered


def verdict(nproc, covered):
    if not covered:
        return "np={}: no size >= 1 MiB measured".format(nproc)
    failing = ["{} ({:.2f})".format(size_name(b), r) for b, r in covered.items()
               if r > TARGET_RATIO]
    worst = max(covered.values())
    if not failing:
        return "np={}: holds (worst {:.2f})".format(nproc, worst)
    return "np={}: DOES NOT hold at {}".format(nproc, ", ".join(failing))


def breakdown_table(nproc, results):
    """Where flock's time goes, from the runs that recorded its timeline (µs)."""
    lines = ["#### np = {}: where flock's time goes (µs)".format(nproc), "",
             "| size | raw MPI | flock | flock, timeline on | queued | negotiating "
             "| communicate | outside the engine |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def med(key, nbytes, scale):
        values = results.get(key, {}).get(nbytes)
        return statistics.median(values) * scale if values else None

    for nbytes in sorted(results.get(TIMELINE, {})):
        timed = med(TIMELINE, nbytes, 1e3)
        span = med(OP_SPAN, nbytes, 1)
        outside = None if timed is None or span is None else timed - span
        cells = [med("raw_mpi", nbytes, 1e3), med("flock", nbytes, 1e3), timed]
        cells += [med(phase, nbytes, 1) for phase in PHASES] + [outside]
        lines.append("| {} | {} |".format(size_name(nbytes),
                                          " | ".join(fmt(c, 1) for c in cells)))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per flockrun")
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--reps", type=int, default=0, help="override timed iterations")
    parser.add_argument("--raw-bin", default=os.path.join(ROOT, "build", "benchmarks",
                                                         "raw_mpi_allreduce"))
    parser.add_argument("--flockrun", default="flockrun")
    parser.add_argument("--mpi-args", action="append", default=[],
                        help="passed to flockrun as --mpi-args (repeatable)")
    parser.add_argument("--save", help="append every run's JSON lines to this file")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                        help="skip the fourth run, flock recording its timeline, and the "
                             "table of where flock's time goes")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    args.mpi_args = [w for a in args.mpi_args for w in ("--mpi-args", a)]
    if not os.access(args.raw_bin, os.X_OK):
        parser.error("{} not built (cmake --build build --target raw_mpi_allreduce)"
                     .format(args.raw_bin))

    impls = ", ".join(IMPLS + ((TIMELINE,) if args.breakdown else ()))
    print("Method: per size, warm-up then >= 20 timed in-place float32 sum allreduces, each "
          "after a barrier; an iteration's time is the max over ranks; a run reports the "
          "median. The programs ({}) ran {} rounds each, interleaved, the order rotated per "
          "round; the tables show the median of the per-round medians, and ratios of those."
          .format(impls, args.rounds))
    print("Machine: {} cores (nproc), shared; np above that is oversubscribed "
          "(flockrun adds --oversubscribe --mca mpi_yield_when_idle 1).".format(os.cpu_count()))
    verdicts = []
    scratch = tempfile.mkdtemp(prefix="flock-bench-")
    for nproc in args.np:
        results = measure(nproc, args, scratch)
        lines, covered = table(nproc, results)
        if args.breakdown:
            lines += [""] + breakdown_table(nproc, results)
        print()
        print("\n".join(lines), flush=True)
        verdicts.append(verdict(nproc, covered))
    shutil.rmtree(scratch, ignore_errors=True)
    print()
    print("Target flock/raw <= {:.2f} at >= 1 MiB: {}".format(TARGET_RATIO, "; ".join(verdicts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
