"""The scaling benchmark on an emulated cluster: throughput, speedup, efficiency, wait share.

Builds emulated hosts (tools/cluster, network namespaces; root needed), then for each
link rate, each host count (1, 2, 4; --ranks-per-host ranks each) and each model runs
bench_scaling.py under flockrun, which times training steps (compute = sleeps; --mode
hooks: the real optimizer wrappers and torch DDP on a synthetic model with the real
model's parameters, --mode hand: ops submitted by hand) for every method. Prints Markdown
tables per rate and model (scaling_report.py: every method and DDP side by side, images/s,
speedup, efficiency, communication share and the time breakdown per worker count) and
writes to --out the JSON lines, the tables (scaling.md) and PNG plots; --json-summary
FILE writes one record per case: model, rate, method, hosts, images_per_s, efficiency,
wait_share. The cluster is removed at the end, also on failure or Ctrl-C.

Compute per step is set as a ratio r to the time one gradient set takes over one link at
--reference-rate (see docs/performance/scaling.md for why):

    compute_s = r * gradient_bytes * 8 / reference_rate_bits

    sudo PATH=$PWD/.venv/bin:$PATH python benchmarks/run_scaling.py \
        [--rates 1gbit none] [--hosts 1 2 4] [--models resnet50 mobilenet_v2] \
        [--mode hooks|hand] [--no-overlap] [--compression fp16] [--json-summary FILE]

Throughput is images/s at --batch images per rank per step; speedup = throughput(N hosts)
/ throughput(1 host); efficiency = speedup / N; wait share = the mean time communication
added to a step (step - compute - apply) / the mean step time. throughput(1 host) is one
number per rate and model, the median over the methods: on one host they all exchange
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

# Gradient bytes (float32) of torchvision's models, and the compute ratio r.
MODELS = {
    "resnet50": {"bytes": 25_557_032 * 4, "ratio": 1.5},
    "mobilenet_v2": {"bytes": 3_504_872 * 4, "ratio": 0.75},
}
METHODS = report.METHODS
HUNG = []  # the cases whose job hung (and were left out), for the report


def compute_seconds(model, reference_rate):
    spec = MODELS[model]
    return spec["ratio"] * spec["bytes"] * 8 / emu.rate_bits_per_second(reference_rate)


def run_methods(cluster, hosts, model, compute_s, args):
    """Every method on `hosts` hosts: one job, and after a hang a new job for the methods
    after the one that hung (it is left out)."""
    records, methods = [], list(args.methods)
    while methods:
        found, hung = run_job(cluster, hosts, args.ranks_per_host, model, compute_s, args,
                              methods)
        records += found
        if not hung:
            break
        rest = [m for m in methods if m not in {r["method"] for r in found}]
        HUNG.append("{} on {} hosts, links {}: {}".format(model, hosts, cluster.rate or "none",
                                                          rest[0]))
        print("scaling: {} hung, left out".format(HUNG[-1]), file=sys.stderr)
        methods = rest[1:]
    return records


def run_job(cluster, hosts, per_host, model, compute_s, args, methods):
    """One flockrun job on `hosts` hosts; returns (its JSON records, whether it hung)."""
    env = cluster.environment()
    command = ["flockrun", "-np", str(hosts * per_host), "-H",
               ",".join("h{}:{}".format(h, per_host) for h in range(1, hosts + 1)),
               sys.executable, os.path.join(HERE, "bench_scaling.py"), "--model", model,
               "--compute-s", "{:.4f}".format(compute_s), "--warmup", str(args.warmup),
               "--steps", str(args.steps), "--mode", args.mode, "--methods", *methods]
    if args.no_overlap:
        command.append("--no-overlap")
    if args.compression != "none":
        command += ["--compression", args.compression]
    hung = False
    # A session of its own, so that a hung job can be ended whole (mpirun and its ranks
    # outlive a killed flockrun, and would take the cores from the jobs after it).
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT, start_new_session=True)
    try:
        stdout, stderr = job.communicate(timeout=args.job_timeout)
        if job.returncode != 0:
            print("scaling: {} on {} hosts failed:\n{}".format(model, hosts, stderr[-3000:]),
                  file=sys.stderr)
    except subprocess.TimeoutExpired:
        stdout, stderr = end_job(cluster, job)
        hung = True
        # The methods that finished before the hang still count; the ranks' stacks are in
        # the log.
        log = os.path.join(args.out, "hung-{}-{}hosts-{}.log".format(
            model, hosts, methods[0]))
        with open(log, "w") as out:
            out.write(stderr)
        print("scaling: {} on {} hosts timed out after {} s; the ranks' stacks: {}".format(
            model, hosts, args.job_timeout, log), file=sys.stderr)
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")], hung


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
    parser.add_argument("--compression", choices=("none", "fp16"), default="none",
                        help="hooks mode: flock's compression=fp16, DDP's fp16_compress_hook")
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
                             "efficiency, wait_share}] as JSON")
    parser.add_argument("--from-jsonl", metavar="PATH",
                        help="tables and plots from a saved scaling.jsonl; run nothing")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.from_jsonl:
        with open(args.from_jsonl) as saved:
            records = [json.loads(line) for line in saved if line.strip()]
    else:
        records = measure(args)
        with open(os.path.join(args.out, "scaling.jsonl"), "w") as out:
            for record in records:
                out.write(json.dumps(record) + "\n")
    if not records:
        return 2
    report.summarize(records, args.batch)
    tables = []
    for case in report.cases(records, args.models, args.rates):
        tables.append(report.table(records, case))
        print(tables[-1])
        path = report.plot(records, case, args.out)
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
        report.write_summary(records, args.json_summary)
        print("summary: " + args.json_summary)
    return 0


def measure(args):
    """Every (rate, hosts, model) job on one emulated cluster; the raw records."""
    reason = emu.namespaces_supported()
    if reason:
        print("scaling: cannot emulate hosts here: " + reason, file=sys.stderr)
        return []
    records = []
    with emu.EmulatedCluster(hosts=max(args.hosts)) as cluster:
        for rate in args.rates:
            cluster.set_rate(None if rate == "none" else rate)
            for hosts in args.hosts:
                for model in args.models:
                    compute_s = compute_seconds(model, args.reference_rate)
                    for record in run_methods(cluster, hosts, model, compute_s, args):
                        record["rate"] = rate
                        records.append(record)
                        print(json.dumps(record), file=sys.stderr, flush=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
