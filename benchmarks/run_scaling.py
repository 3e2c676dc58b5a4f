"""The scaling benchmark on an emulated cluster: throughput, speedup, efficiency, wait share.

Builds emulated hosts (tools/cluster, network namespaces; root needed), then for each
link rate, each host count (1, 2, 4; --ranks-per-host ranks each), each model and each
--compression runs bench_scaling.py under flockrun (one job), which times training steps
(compute = sleeps; --mode hooks: the real optimizer wrappers and torch DDP on a synthetic
model with the real model's parameters, --mode hand: ops submitted by hand) for every
method. --rounds N runs every job N times, interleaved: round 1 of every job, then
round 2 of every job, ..., the methods' order rotated by one each round
(scaling_rounds.py), so that a slow spell of the shared machine does not land on one
job or one method. Prints Markdown tables per rate, model and compression
(scaling_report.py: every method and DDP side by side, images/s, speedup, efficiency,
communication share and the time breakdown per worker count; after several rounds each
number is the median over the rounds, and images/s shows the rounds' min-max) and writes
to --out the raw records as JSON lines (scaling.jsonl, one per method, job and round,
written as they come), the tables (scaling.md) and PNG plots; --json-summary FILE writes
one record per case: model, rate, method, hosts, images_per_s, efficiency, wait_share
(the medians; with several rounds also rounds, images_per_s_min/_max and
efficiency_min/_max; with compression, compression). --from-jsonl redoes the tables,
plots and summary from a saved scaling.jsonl, of one round or several. The cluster is
removed at the end, also on failure or Ctrl-C.

Compute per step is set as a ratio r to the time one gradient set takes over one link at
--reference-rate (see docs/performance/scaling.md for why):

    compute_s = r * gradient_bytes * 8 / reference_rate_bits

    sudo PATH=$PWD/.venv/bin:$PATH python benchmarks/run_scaling.py \
        [--rates 1gbit none] [--hosts 1 2 4] [--models resnet50 mobilenet_v2] \
        [--mode hooks|hand] [--no-overlap] [--compression none fp16] [--rounds 3] \
        [--json-summary FILE]

Throughput is images/s at --batch images per rank per step, per round batch x ranks /
the mean step time; wait share = the mean time communication added to a step
(step - compute - apply) / the mean step time, per round. Reported: the median over the
rounds of each. speedup = throughput(N hosts) / B; efficiency = speedup / N, i.e. the
median images/s at N hosts / (N x B), where B = throughput(1 host) is one number per
rate, model, mode and compression: the median over the methods of their 1-host
throughputs (each the median over its rounds). On one host the methods all exchange
within the machine, so their differences there are noise, which a per-method baseline
would carry into every efficiency.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "cluster"))

import cluster as emu  # noqa: E402
import scaling_report as report  # noqa: E402
import scaling_rounds  # noqa: E402

# Gradient bytes (float32) of torchvision's models, and the compute ratio r.
MODELS = {
    "resnet50": {"bytes": 25_557_032 * 4, "ratio": 1.5},
    "mobilenet_v2": {"bytes": 3_504_872 * 4, "ratio": 0.75},
}
METHODS = report.METHODS
HUNG = []  # the cases whose job hung (and were left out), for the report
COMPRESSIONS = report.COMPRESSIONS


def compute_seconds(model, reference_rate):
    spec = MODELS[model]
    return spec["ratio"] * spec["bytes"] * 8 / emu.rate_bits_per_second(reference_rate)


def run_methods(cluster, job, compute_s, args):
    """Every method of `job` (a scaling_rounds.schedule() entry) on its hosts: one
    flockrun, and after a hang a new one for the methods after the one that hung (it is
    left out of this round; its ranks' stacks are kept in --out)."""
    records, methods = [], list(job["methods"])
    while methods:
        found, stacks = run_job(cluster, dict(job, methods=methods), compute_s, args)
        records += found
        if stacks is None:
            break
        rest = [m for m in methods if m not in {r["method"] for r in found}]
        # Hung after every method printed its record: in the shutdown.
        note_hang(job, rest[0] if rest else "shutdown", stacks, args)
        methods = rest[1:]
    return records


def describe(job, args):
    """The job in words: resnet50 on 4 hosts, links 1gbit[, fp16][, round 2]."""
    return "{} on {} hosts, links {}{}{}".format(
        job["model"], job["hosts"], job["rate"],
        ", " + job["compression"] if job["compression"] != "none" else "",
        ", round {}".format(job["round"]) if args.rounds > 1 else "")


def note_hang(job, method, stacks, args):
    """Lists the hung case for the report and keeps its ranks' stacks in --out."""
    HUNG.append("{}: {}".format(describe(job, args), method))
    name = "hung-{}-{}hosts-{}{}{}.log".format(
        job["model"], job["hosts"], method,
        "-" + job["compression"] if job["compression"] != "none" else "",
        "-round{}".format(job["round"]) if args.rounds > 1 else "")
    log = os.path.join(args.out, name)
    with open(log, "w") as out:
        out.write(stacks)
    print("scaling: {} hung, left out; the ranks' stacks: {}".format(HUNG[-1], log),
          file=sys.stderr)


def job_command(job, compute_s, args):
    """The flockrun command line of one job."""
    hosts, per_host = job["hosts"], args.ranks_per_host
    command = ["flockrun", "-np", str(hosts * per_host), "-H",
               ",".join("h{}:{}".format(h, per_host) for h in range(1, hosts + 1)),
               sys.executable, os.path.join(HERE, "bench_scaling.py"), "--model",
               job["model"], "--compute-s", "{:.4f}".format(compute_s), "--warmup",
               str(args.warmup), "--steps", str(args.steps), "--mode", args.mode,
               "--methods", *job["methods"]]
    if args.no_overlap:
        command.append("--no-overlap")
    if job["compression"] != "none":
        command += ["--compression", job["compression"]]
    return command


def run_job(cluster, job, compute_s, args):
    """One flockrun job; returns (its JSON records, its stderr if it hung, else None)."""
    # A session of its own, so that a hung job can be ended whole (mpirun and its ranks
    # outlive a killed flockrun, and would take the cores from the jobs after it).
    process = subprocess.Popen(job_command(job, compute_s, args), env=cluster.environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT, start_new_session=True)
    stacks = None
    try:
        stdout, stderr = process.communicate(timeout=args.job_timeout)
        if process.returncode != 0:
            print("scaling: {} failed:\n{}".format(describe(job, args), stderr[-3000:]),
                  file=sys.stderr)
    except subprocess.TimeoutExpired:
        # The methods that finished before the hang still count.
        stdout, stacks = end_job(cluster, process)
        print("scaling: {} timed out after {} s".format(describe(job, args),
                                                        args.job_timeout), file=sys.stderr)
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")], stacks


def end_job(cluster, job):
    """Stops a hung job: SIGTERM to flockrun (it ends mpirun and the ranks), then SIGKILL
    to its session and to what is left in the hosts; returns its (stdout, stderr)."""
    for index in range(1, cluster.hosts + 1):
        dump_stacks(cluster.namespace(index))
    time.sleep(3)  # for the stacks to reach flockrun's output
    job.terminate()
    try:
        return job.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        for index in range(1, cluster.hosts + 1):
            emu.netns.kill_processes(cluster.namespace(index))
        return job.communicate()


def dump_stacks(namespace):
    """SIGUSR1 to the benchmark's ranks in a host: each prints its Python stacks
    (bench_scaling.py registers faulthandler), which say where the job hung."""
    for pid in emu.netns.run(["ip", "netns", "pids", namespace], check=False).split():
        try:
            with open("/proc/{}/cmdline".format(pid), "rb") as cmdline:
                if b"bench_scaling.py" in cmdline.read():
                    os.kill(int(pid), signal.SIGUSR1)
        except (OSError, ValueError):
            pass  # ended meanwhile


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1, got {}".format(value))
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", nargs="+", default=["1gbit", "none"],
                        help="link rates; 'none' leaves the links unshaped")
    parser.add_argument("--hosts", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--ranks-per-host", type=int, default=2)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS),
                        default=["resnet50", "mobilenet_v2"])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--mode", choices=("hooks", "hand"), default="hooks",
                        help="hooks: the optimizer wrappers and DDP on a synthetic model; "
                             "hand: ops submitted by hand (no ddp)")
    parser.add_argument("--no-overlap", action="store_true",
                        help="hooks mode: ATC with overlap_next_forward=False")
    parser.add_argument("--compression", nargs="+", choices=COMPRESSIONS, default=["none"],
                        help="hooks mode: flock's compression=fp16, DDP's fp16_compress_hook;"
                             " 'none fp16': a job for each, interleaved")
    parser.add_argument("--rounds", type=positive, default=1,
                        help="run every job this many times, interleaved, and report "
                             "the medians (and images/s min-max) over the rounds")
    parser.add_argument("--reference-rate", default="1gbit",
                        help="the link rate the compute ratio r refers to")
    parser.add_argument("--batch", type=int, default=64, help="images per rank per step")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--job-timeout", type=float, default=900,
                        help="seconds one flockrun job (all methods) may take")
    parser.add_argument("--out", default=os.path.join(ROOT, "out", "scaling"))
    parser.add_argument("--json-summary", metavar="FILE",
                        help="also write [{model, rate, method, hosts, images_per_s, "
                             "efficiency, wait_share}] as JSON (medians over the rounds)")
    parser.add_argument("--from-jsonl", metavar="PATH",
                        help="tables and plots from a saved scaling.jsonl (any number of "
                             "rounds); run nothing")
    args = parser.parse_args(argv)
    args.compression = list(dict.fromkeys(args.compression))
    if args.mode == "hand" and args.compression != ["none"]:
        parser.error("--compression is for the hooks mode")
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.from_jsonl:
        with open(args.from_jsonl) as saved:
            records = [json.loads(line) for line in saved if line.strip()]
    else:
        # Written as they come: a run cut short can still be redone with --from-jsonl.
        with open(os.path.join(args.out, "scaling.jsonl"), "w") as saved:
            records = measure(args, saved)
    if not records:
        return 2
    render(report.summarize(records, args.batch), args)
    return 0


def render(rows, args):
    """The tables (printed and in scaling.md), the plots and the JSON summary of
    summarize()'s rows."""
    tables = []
    for case in report.cases(rows, args.models, args.rates):
        tables.append(report.table(rows, case))
        print(tables[-1])
        path = report.plot(rows, case, args.out)
        if path:
            print("plot: " + os.path.relpath(path, ROOT) + "\n")
    markdown = os.path.join(args.out, "scaling.md")
    with open(markdown, "w") as out:
        out.write("# Scaling on emulated hosts\n\n" + "\n".join(tables))
        if HUNG:
            out.write("\nHung (left out; the ranks' stacks are in hung-*.log):\n\n" +
                      "".join("- {}\n".format(case) for case in HUNG))
    print("tables: " + os.path.relpath(markdown, ROOT))
    if args.json_summary:
        report.write_summary(rows, args.json_summary)
        print("summary: " + args.json_summary)


def measure(args, saved):
    """Every job of every round (scaling_rounds.schedule) on one emulated cluster; the
    raw records, each with its job's "rate" and "round", also written to `saved`."""
    reason = emu.namespaces_supported()
    if reason:
        print("scaling: cannot emulate hosts here: " + reason, file=sys.stderr)
        return []
    jobs = scaling_rounds.schedule(args.rounds, args.rates, args.hosts, args.models,
                                   args.compression, args.methods)
    records, rate = [], object()
    with emu.EmulatedCluster(hosts=max(args.hosts)) as cluster:
        for number, job in enumerate(jobs, 1):
            if job["rate"] != rate:
                rate = job["rate"]
                cluster.set_rate(None if rate == "none" else rate)
            print("scaling: job {} of {}: {}".format(number, len(jobs), describe(job, args)),
                  file=sys.stderr, flush=True)
            compute_s = compute_seconds(job["model"], args.reference_rate)
            for record in run_methods(cluster, job, compute_s, args):
                record.update(rate=job["rate"], round=job["round"])
                record.setdefault("compression", job["compression"])
                records.append(record)
                saved.write(json.dumps(record) + "\n")
                saved.flush()
                print(json.dumps(record), file=sys.stderr, flush=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
