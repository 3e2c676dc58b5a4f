"""Runs the neighbor_allreduce benchmark (raw-MPI floor, flock) and prints markdown tables.

For each world size, raw_mpi_neighbor (the C floor: Isend/Irecv and MPI_Neighbor_allgather,
both measured, the faster by median is the floor) and bench_neighbor.py (flock's
neighbor_allreduce alternating call by call with the Isend/Irecv floor run in the same
processes through ctypes, flock's allreduce, and the ResNet-50 set as 161 nonblocking
tensors vs one call) run under flockrun one after the other, --rounds times, the order
swapped every round. Each run reports per case the median over timed iterations of the
slowest rank's time; the tables show the median of those per-run medians.

flock/floor, the ratio the targets are checked on, is paired: per round, flock's median
over the in-process floor's median from the same run (the two alternated call by call, so
they saw the same load), and the table shows the median of those per-round ratios. On this
shared VM a separate program's medians move by tens of percent between launches minutes
apart; the C floor program is there to show that the in-process floor is as fast as C, and
flock/C floor is shown beside. 3 rounds took ~3 min at np 2 and ~8 min at np 4 before
the floor on the 161 tensors joined the ResNet-50 case; 6 rounds of that case alone
(--max-bytes 1) now take ~4 min at np 2 and ~9 min at np 4.

A run that fails or times out is reported (its stderr tail goes to stderr, a note to the
tables) and the rounds go on; lines it printed before failing are kept. A program that has
failed --max-failures times at one world size is not run again at that size.

    PATH=$PWD/.venv/bin:$PATH python benchmarks/run_neighbor.py [--np 2 4] [--rounds 5]
    python benchmarks/run_neighbor.py --np 2 --rounds 3 --programs raw --save runs.jsonl

Needs build/benchmarks/raw_mpi_neighbor (cmake --build build --target raw_mpi_neighbor)
and flock installed in the Python that runs this script.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from run_allreduce import TARGET_FROM_BYTES, TARGET_RATIO, fmt, ratio, size_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = ("raw", "flock")
PROGRAM_FILES = {"raw": "raw_mpi_neighbor", "flock": "bench_neighbor.py"}
FLOORS = ("raw_isend", "raw_neighbor_allgather")
PAIRED_FLOOR = "inprocess_isend"
NEIGHBOR, ALLREDUCE = "flock_neighbor_allreduce", "flock_allreduce"
RESNET50_TENSORS = 161
TARGET_MANY_VS_ONE = 1.30  # 161 nonblocking tensors vs one call of the same total size


def command_for(program, args):
    extra = ["--max-bytes", str(args.max_bytes)] + (["--reps", str(args.reps)] if args.reps else [])
    extra += [] if args.resnet50 else ["--no-resnet50"]
    if program == "raw":
        return [args.raw_bin] + extra
    extra += [] if args.allreduce else ["--no-allreduce"]
    return [sys.executable, os.path.join(HERE, "bench_neighbor.py")] + extra


def run_with_timeout(cmd, timeout):
    """(returncode or None on timeout, stdout, stderr). On timeout flockrun gets SIGTERM (it
    forwards it to mpirun), then its process group -- this run's own session -- SIGKILL."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        return proc.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            stdout, stderr = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        return None, stdout, stderr


def run_once(program, nproc, args):
    """One flockrun: ({(impl, case, tensors, bytes): median ms}, error message or None)."""
    cmd = [args.flockrun, "-np", str(nproc)] + args.mpi_args + command_for(program, args)
    start = time.monotonic()
    returncode, stdout, stderr = run_with_timeout(cmd, args.timeout)
    error = None
    if returncode is None:
        error = "timed out after {:.0f} s".format(args.timeout)
    elif returncode != 0:
        error = "rc={}: {}".format(returncode, last_error_line(stderr))
    if error:
        print(stderr[-2000:], file=sys.stderr)
    lines = []
    for text in stdout.splitlines():
        if text.startswith("{"):
            try:
                lines.append(json.loads(text))
            except ValueError:
                pass  # a line cut short by the failure
    if args.save:
        with open(args.save, "a") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")
    print("  {:5s} np={} {} {:.1f} s, {} lines".format(program, nproc, error or "ok",
                                                       time.monotonic() - start, len(lines)),
          file=sys.stderr)
    values = {(l["impl"], l["case"], l["tensors"], l["bytes"]): l["median_ms"] for l in lines}
    return values, error


def last_error_line(stderr):
    """The most telling line of a failed run's stderr (a Python error or our own message)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in reversed(lines):
        if "Error" in line or "rank " in line or "flock" in line:
            return line[:200]
    return lines[-1][:200] if lines else "no output"


def measure(nproc, args):
    """(one {key: ms} dict per round, notes about failed runs)."""
    rounds, failures, notes = [], {p: 0 for p in PROGRAMS}, []
    for r in range(args.rounds):
        order = args.programs if r % 2 == 0 else args.programs[::-1]
        print("np={} round {}/{}: {}".format(nproc, r + 1, args.rounds, ", ".join(order)),
              file=sys.stderr)
        values = {}
        for program in order:
            if failures[program] >= args.max_failures:
                continue
            got, error = run_once(program, nproc, args)
            values.update(got)
            if error:
                failures[program] += 1
                notes.append("{} failed in round {}: {}".format(program, r + 1, error))
                if failures[program] == args.max_failures:
                    notes.append("{} not run again at np {} ({} failures)".format(
                        program, nproc, failures[program]))
        rounds.append(values)
    return rounds, notes


def median_of(rounds, key):
    values = [r[key] for r in rounds if key in r]
    return statistics.median(values) if values else None


def floor_of(rounds, case, nbytes):
    """(the floor's median, its impl): the faster of the two raw methods by median."""
    medians = [(median_of(rounds, (impl, case, 1, nbytes)), impl) for impl in FLOORS]
    medians = [m for m in medians if m[0] is not None]
    return min(medians) if medians else (None, None)


def round_ratios(rounds, num, den):
    """num/den (keys) within each round that has both."""
    return [r[num] / r[den] for r in rounds if num in r and den in r]


def per_round(rounds, num, den):
    """'min–max' of the per-round ratios num/den."""
    values = round_ratios(rounds, num, den)
    return "{:.2f}–{:.2f}".format(min(values), max(values)) if values else "–"


def paired_ratio(rounds, num, den):
    """The median over rounds of num/den taken within each round (keys), or None."""
    values = round_ratios(rounds, num, den)
    return statistics.median(values) if values else None


def sizes_table(nproc, rounds):
    """Markdown lines and {label: flock/floor} for the sizes the 1.10 target covers: the
    paired ratio, or flock over the C floor where no in-process floor ran."""
    lines = ["### np = {}: neighbor_allreduce, ExponentialGraph".format(nproc), "",
             "| size | floor in-process (ms) | flock neighbor_allreduce (ms) "
             "| flock/floor, paired | per round (min–max) | C floor (ms) | flock/C floor "
             "| flock allreduce (ms) | C Isend/Irecv (ms) | C Neighbor_allgather (ms) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    covered = {}
    sizes = sorted({k[3] for r in rounds for k in r if k[1] == "sizes"})
    for nbytes in sizes:
        flock_key = (NEIGHBOR, "sizes", 1, nbytes)
        paired_key = (PAIRED_FLOOR, "sizes", 1, nbytes)
        c_floor, _ = floor_of(rounds, "sizes", nbytes)
        flock = median_of(rounds, flock_key)
        paired = paired_ratio(rounds, flock_key, paired_key)
        separate = ratio(flock, c_floor)
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            size_name(nbytes), fmt(median_of(rounds, paired_key)), fmt(flock), fmt(paired, 2),
            per_round(rounds, flock_key, paired_key), fmt(c_floor), fmt(separate, 2),
            fmt(median_of(rounds, (ALLREDUCE, "sizes", 1, nbytes))),
            *(fmt(median_of(rounds, (impl, "sizes", 1, nbytes))) for impl in FLOORS)))
        if nbytes >= TARGET_FROM_BYTES and paired is not None:
            covered[size_name(nbytes)] = paired
        elif nbytes >= TARGET_FROM_BYTES and separate is not None:
            covered[size_name(nbytes) + " vs C floor"] = separate
    return lines, covered


def resnet50_table(nproc, rounds):
    """Markdown lines, the 161/one ratio and (label, the one-call flock/floor ratio): paired,
    or against the C floor where no in-process floor ran (Nones if not measured)."""
    keys = {k for r in rounds for k in r if k[1] == "resnet50"}
    if not keys:
        return [], None, (None, None)
    nbytes = max(k[3] for k in keys)
    c_floor, _ = floor_of(rounds, "resnet50", nbytes)
    many_key = (NEIGHBOR, "resnet50", RESNET50_TENSORS, nbytes)
    one_key = (NEIGHBOR, "resnet50", 1, nbytes)
    paired_key = (PAIRED_FLOOR, "resnet50", 1, nbytes)
    floor_many_key = (PAIRED_FLOOR, "resnet50", RESNET50_TENSORS, nbytes)
    many, one = median_of(rounds, many_key), median_of(rounds, one_key)
    many_vs_one = paired_ratio(rounds, many_key, one_key)
    one_vs_floor = paired_ratio(rounds, one_key, paired_key)
    label = "ResNet-50 one call"
    if one_vs_floor is None:
        one_vs_floor, label = ratio(one, c_floor), label + " vs C floor"
    lines = ["#### np = {}: ResNet-50 gradients ({} tensors, {:.1f} MiB)".format(
                 nproc, RESNET50_TENSORS, nbytes / (1 << 20)), "",
             "| floor in-process, one buffer (ms) | flock 161 tensors (ms) "
             "| flock one call (ms) | 161/one, paired | 161/one per round (min–max) "
             "| one/floor, paired | floor 161 tensors (ms) | floor 161/one, paired "
             "| C floor, one buffer (ms) | one/C floor |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
             "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                 fmt(median_of(rounds, paired_key)), fmt(many), fmt(one), fmt(many_vs_one, 2),
                 per_round(rounds, many_key, one_key),
                 fmt(paired_ratio(rounds, one_key, paired_key), 2),
                 fmt(median_of(rounds, floor_many_key)),
                 fmt(paired_ratio(rounds, floor_many_key, paired_key), 2), fmt(c_floor),
                 fmt(ratio(one, c_floor), 2))]
    return lines, many_vs_one, (label, one_vs_floor)


def verdicts(nproc, covered, many_vs_one):
    """Two lines: the 1.10 target at >= 1 MiB and the 161-vs-one target."""
    if not covered:
        floor_line = "np={}: no flock/floor ratio at >= 1 MiB measured".format(nproc)
    else:
        failing = ["{} ({:.2f})".format(label, r) for label, r in covered.items()
                   if r > TARGET_RATIO]
        floor_line = ("np={}: holds (worst {:.2f})".format(nproc, max(covered.values()))
                      if not failing else
                      "np={}: DOES NOT hold at {}".format(nproc, ", ".join(failing)))
    if many_vs_one is None:
        many_line = "np={}: not measured".format(nproc)
    else:
        many_line = "np={}: {} ({:.2f})".format(
            nproc, "holds" if many_vs_one <= TARGET_MANY_VS_ONE else "DOES NOT hold", many_vs_one)
    return floor_line, many_line


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--programs", nargs="+", choices=PROGRAMS, default=list(PROGRAMS),
                        help="run only some of the programs (e.g. --programs raw)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per flockrun")
    parser.add_argument("--max-failures", type=int, default=2,
                        help="stop running a program at a world size after this many failures")
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--reps", type=int, default=0, help="override timed iterations")
    parser.add_argument("--no-resnet50", dest="resnet50", action="store_false",
                        help="skip the ResNet-50 case in both programs")
    parser.add_argument("--no-allreduce", dest="allreduce", action="store_false",
                        help="skip bench_neighbor's bf.allreduce comparison")
    parser.add_argument("--raw-bin", default=os.path.join(ROOT, "build", "benchmarks",
                                                         "raw_mpi_neighbor"))
    parser.add_argument("--flockrun", default="flockrun")
    parser.add_argument("--mpi-args", action="append", default=[],
                        help="passed to flockrun as --mpi-args (repeatable)")
    parser.add_argument("--save", help="append every run's JSON lines to this file")
    args = parser.parse_args(argv)
    args.mpi_args = [w for a in args.mpi_args for w in ("--mpi-args", a)]
    if not os.access(args.raw_bin, os.X_OK):
        parser.error("{} not built (cmake --build build --target raw_mpi_neighbor)"
                     .format(args.raw_bin))
    return args


def main(argv=None):
    args = parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    print("Method: per case, warm-up (the first iteration's result checked) then >= 20 timed "
          "float32 neighbor averages on the static ExponentialGraph (uniform weights), each "
          "after a barrier; an iteration's time is the max over ranks; a run reports the "
          "median. {} ran {} rounds{}; "
          "the tables show the median of the per-round medians. Paired ratios are per round "
          "(flock and the in-process Isend/Irecv floor alternating call by call in one run), "
          "median over rounds. The C floor is the faster (by median) of Isend/Irecv and "
          "MPI_Neighbor_allgather in raw_mpi_neighbor."
          .format(" and ".join(PROGRAM_FILES[p] for p in args.programs), args.rounds,
                  " each, alternating" if len(args.programs) > 1 else ""))
    print("Machine: {} cores (nproc), shared; np above that is oversubscribed "
          "(flockrun adds --oversubscribe --mca mpi_yield_when_idle 1).".format(os.cpu_count()))
    floor_verdicts, many_verdicts = [], []
    for nproc in args.np:
        rounds, notes = measure(nproc, args)
        lines, covered = sizes_table(nproc, rounds)
        resnet_lines, many_vs_one, (label, one_vs_floor) = resnet50_table(nproc, rounds)
        if one_vs_floor is not None:
            covered[label] = one_vs_floor
        print()
        print("\n".join(lines + ([""] + resnet_lines if resnet_lines else [])))
        if notes:
            print("\n" + "\n".join("- {}".format(note) for note in notes))
        floor_line, many_line = verdicts(nproc, covered, many_vs_one)
        floor_verdicts.append(floor_line)
        many_verdicts.append(many_line)
    print()
    print("Target flock/floor <= {:.2f} at >= 1 MiB: {}".format(TARGET_RATIO,
                                                              "; ".join(floor_verdicts)))
    if args.resnet50:
        print("Target ResNet-50 161 tensors / one call <= {:.2f}: {}".format(
            TARGET_MANY_VS_ONE, "; ".join(many_verdicts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
