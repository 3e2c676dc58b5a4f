"""The scaling benchmark on an emulated cluster: throughput, speedup, efficiency, wait share.

Builds 4 emulated hosts (tools/cluster, network namespaces; root needed), then for each
link rate, each host count (1, 2, 4; --ranks-per-host ranks each) and each model runs
bench_scaling.py under flockrun, which times simulated training steps (compute = sleep,
gradients = the model's real tensor set) for every method. Prints a markdown table per
rate and model, writes the JSON lines and PNG plots to --out. The cluster is removed at
the end, also on failure or Ctrl-C.

Compute per step is set as a ratio r to the time one gradient set takes over one link at
--reference-rate (see docs/performance/scaling.md for why):

    compute_s = r * gradient_bytes * 8 / reference_rate_bits

    sudo PATH=$PWD/.venv/bin:$PATH python benchmarks/run_scaling.py \
        [--rates 1gbit none] [--hosts 1 2 4] [--models resnet50 mobilenet_v2]

Throughput is images/s at --batch images per rank per step; speedup = throughput(N hosts)
/ throughput(1 host); efficiency = speedup / N; wait share = the mean time a step spent
waiting in synchronize / the mean step time. throughput(1 host) is one number per rate and
model, the median over the methods: on one host they all run the same shared-memory
exchange, so their differences there are noise, which a per-method baseline would carry
into every efficiency.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "cluster"))

import cluster as emu  # noqa: E402

# Gradient bytes (float32) of torchvision's models, and the compute ratio r.
MODELS = {
    "resnet50": {"bytes": 25_557_032 * 4, "ratio": 1.5},
    "mobilenet_v2": {"bytes": 3_504_872 * 4, "ratio": 0.75},
}
METHODS = ("allreduce", "neighbor_static", "neighbor_one_peer", "hierarchical",
           "hierarchical_one_peer")
JOB_TIMEOUT_S = 900


def compute_seconds(model, reference_rate):
    spec = MODELS[model]
    return spec["ratio"] * spec["bytes"] * 8 / emu.rate_bits_per_second(reference_rate)


def run_job(cluster, hosts, per_host, model, compute_s, args):
    """One flockrun job on `hosts` hosts; returns its JSON records."""
    env = cluster.environment()
    command = ["flockrun", "-np", str(hosts * per_host), "-H",
               ",".join("h{}:{}".format(h, per_host) for h in range(1, hosts + 1)),
               sys.executable, os.path.join(HERE, "bench_scaling.py"), "--model", model,
               "--compute-s", "{:.4f}".format(compute_s), "--warmup", str(args.warmup),
               "--steps", str(args.steps), "--methods", *args.methods]
    try:
        job = subprocess.run(command, env=env, capture_output=True, text=True,
                             timeout=JOB_TIMEOUT_S, cwd=ROOT)
    except subprocess.TimeoutExpired:
        print("scaling: {} on {} hosts timed out".format(model, hosts), file=sys.stderr)
        return []
    if job.returncode != 0:
        print("scaling: {} on {} hosts failed:\n{}".format(model, hosts, job.stderr[-3000:]),
              file=sys.stderr)
    return [json.loads(line) for line in job.stdout.splitlines() if line.startswith("{")]


def summarize(records, batch):
    """Add images/s, speedup, efficiency and wait share to each record."""
    one_host = {}
    for r in records:
        r["images_per_s"] = batch * r["ranks"] / r["step_s"]
        r["wait_share"] = r["wait_s"] / r["step_s"]
        if r["machines"] == 1:
            one_host.setdefault((r["rate"], r["model"]), []).append(r["images_per_s"])
    base = {key: statistics.median(values) for key, values in one_host.items()}
    for r in records:
        one = base.get((r["rate"], r["model"]))
        r["speedup"] = r["images_per_s"] / one if one else None
        r["efficiency"] = r["speedup"] / r["machines"] if one else None
    return records


def table(records, rate, model):
    rows = [r for r in records if r["rate"] == rate and r["model"] == model]
    if not rows:
        return ""
    lines = ["### {}, links {} (compute {:.3f} s per step)".format(
                 model, rate, rows[0]["compute_s"]), "",
             "| method | hosts | ranks | step s | steps/s | images/s | speedup | efficiency "
             "| wait share |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for method in METHODS:
        for r in sorted((r for r in rows if r["method"] == method), key=lambda r: r["machines"]):
            fmt = (lambda v, f: f.format(v) if v is not None else "-")
            lines.append("| {} | {} | {} | {:.3f} | {:.2f} | {:.0f} | {} | {} | {:.0%} |".format(
                method, r["machines"], r["ranks"], r["step_s"], 1 / r["step_s"],
                r["images_per_s"],
                fmt(r["speedup"], "{:.2f}"), fmt(r["efficiency"], "{:.0%}"), r["wait_share"]))
    return "\n".join(lines) + "\n"


def plot(records, rate, model, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in records if r["rate"] == rate and r["model"] == model]
    if not rows:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    hosts = sorted({r["machines"] for r in rows})
    for method in METHODS:
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["machines"])
        if not mine:
            continue
        left.plot([r["machines"] for r in mine], [r["images_per_s"] for r in mine], "o-",
                  label=method)
        right.plot([r["machines"] for r in mine], [100 * (r["efficiency"] or 0) for r in mine],
                   "o-", label=method)
    ones = [r["images_per_s"] for r in rows if r["machines"] == 1]
    if ones:
        base = statistics.median(ones)  # the baseline of the efficiencies
        left.plot(hosts, [base * h for h in hosts], "k--", label="linear scaling")
    left.set(xlabel="hosts (2 ranks each)", ylabel="images/s", xticks=hosts,
             title="{}: throughput, links {}".format(model, rate))
    right.set(xlabel="hosts (2 ranks each)", ylabel="efficiency %", xticks=hosts, ylim=(0, 110),
              title="{}: scaling efficiency".format(model))
    right.axhline(100, color="k", linestyle="--", linewidth=0.8)
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, "scaling-{}-{}.png".format(model, rate))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", nargs="+", default=["1gbit", "none"],
                        help="link rates; 'none' leaves the links unshaped")
    parser.add_argument("--hosts", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--ranks-per-host", type=int, default=2)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS),
                        default=["resnet50", "mobilenet_v2"])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--reference-rate", default="1gbit",
                        help="the link rate the compute ratio r refers to")
    parser.add_argument("--batch", type=int, default=64, help="images per rank per step")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--out", default=os.path.join(ROOT, "out", "scaling"))
    parser.add_argument("--from-jsonl", metavar="PATH",
                        help="tables and plots from a saved scaling.jsonl; run nothing")
    args = parser.parse_args(argv)
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
    summarize(records, args.batch)
    for rate in sorted({r["rate"] for r in records}, key=args.rates.index
                       if all(r["rate"] in args.rates for r in records) else str):
        for model in args.models:
            print(table(records, rate, model))
            path = plot(records, rate, model, args.out)
            if path:
                print("plot: " + os.path.relpath(path, ROOT) + "\n")
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
                    for record in run_job(cluster, hosts, args.ranks_per_host, model,
                                          compute_s, args):
                        record["rate"] = rate
                        records.append(record)
                        print(json.dumps(record), file=sys.stderr, flush=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
