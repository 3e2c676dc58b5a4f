"""Elastic training on 3 emulated hosts x 2 slots: the ElasticDL / Elastic Horovod
experiments, with examples/python/elastic_digits.py as the job.

    sudo PATH=$PWD/.venv/bin:$PATH python benchmarks/elastic_scenario.py   # ~10 min
        [--part a|b|all] [--epochs 30] [--step-ms 100] [--commit-every 10]
        [--out-dir out/elastic] [--png-dir DIR] [--from-json elastic_scenario.json]

(a) Two jobs that each want 4 ranks share the 6 slots. Elastic: A starts on
    h1:2,h2:2; B is submitted a few seconds later with --min-np 2 --max-np 4 and its
    discovery file lists the free slots (h3:2); when A ends, the driver (playing
    the cluster's scheduler) lists A's slots in B's discovery file too and B grows
    to 4 at its next commit. Gang scheduling: B, submitted at the same moment, waits
    (flockrun --min-np 4 on an empty discovery file) until A ends, then starts on 4.
(b) One job of 6 ranks loses host h3 (its ranks SIGKILLed inside the namespace, the
    host dropped from discovery) and gets it back some epochs later.
(c) The final accuracy of (b) against an undisturbed 6-rank run of the same settings.

Every line of every flockrun is time-stamped as it arrives; "launch N: K ranks on
H" gives a job's slots over time, "launch N failed" / "ended at a commit" the
moment it gave them back. Prints Markdown tables, writes elastic_scenario.json
and the per-job logs to --out-dir, elastic-sharing.png and elastic-host-loss.png
to --png-dir (default --out-dir; skipped with a note without matplotlib). Needs
root (network namespaces) and the emulated cluster to itself.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "python", "elastic_digits.py")
sys.path.insert(0, os.path.join(ROOT, "tools", "cluster"))
import cluster as emu  # noqa: E402
from line_log import LineLog  # noqa: E402  (beside this script)

SLOTS = 6
SUBMIT_DELAY_S = 5.0
JOB_TIMEOUT_S = 900
LAUNCH = re.compile(r"^flockrun: launch (\d+): (\d+) ranks on (\S+)")
RELEASED = re.compile(r"^flockrun: launch \d+ (failed|ended at a commit|ended while)")
TRAINING = re.compile(r"^(committed step|resumed at step)")


class Job(LineLog):
    """One flockrun --elastic of the example, its own discovery file and session."""

    def __init__(self, name, workdir, hosts, flock_args, settings, env, t0):
        self.name, self.t0 = name, t0
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.hosts_file = os.path.join(self.dir, "hosts.txt")
        self.record_file = os.path.join(self.dir, "record.json")
        script = os.path.join(self.dir, "hosts.sh")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(f"#!/bin/sh\ncat {self.hosts_file}\n")
        os.chmod(script, 0o755)
        self.set_hosts(hosts)
        argv = [sys.executable, "-m", "flockrun", "--elastic", "--discovery-interval", "0.5",
                "--host-discovery-script", script, "--elastic-dir",
                os.path.join(self.dir, "commits"), *flock_args, sys.executable, EXAMPLE,
                "--epochs", str(settings.epochs), "--step-ms", str(settings.step_ms),
                "--commit-every", str(settings.commit_every), "--print-commits",
                "--json", self.record_file]
        self.submit = self.now()
        self.slots, self.training = [], []
        super().__init__(argv, self.dir, env, clock=self.now)

    def now(self):
        return time.monotonic() - self.t0

    def set_hosts(self, text):
        """What discovery offers from now on (the scheduler's decision)."""
        with open(self.hosts_file + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(self.hosts_file + ".tmp", self.hosts_file)  # never half a list

    def on_line(self, t, line):
        launch = LAUNCH.match(line)
        if launch:
            self.slots.append((t, int(launch.group(2)), launch.group(3)))
        elif RELEASED.match(line):
            self.slots.append((t, 0, ""))
        elif TRAINING.match(line):
            self.training.append(t)

    def on_end(self, t):
        self.slots.append((t, 0, ""))

    def wait_for(self, pattern, count=1, timeout=JOB_TIMEOUT_S):
        try:
            return super().wait_for(pattern, count, timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"{self.name}: {exc}") from None

    def finish(self):
        try:
            code = self.proc.wait(timeout=JOB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError(f"{self.name} did not finish:\n" + self.text()) from None
        self.wait_end()
        if code != 0:
            raise RuntimeError(f"{self.name} exited with {code}:\n" + self.text())
        with open(self.record_file, encoding="utf-8") as handle:
            return json.load(handle)

    def summary(self, record=None):
        starts = [t for t, k, _ in self.slots if k > 0]
        result = {"name": self.name, "submit": self.submit, "start": starts[0] if starts else None,
                  "end": self.end, "slots": self.slots, "training": self.training}
        if record is not None:
            result.update(accuracy=record["accuracy"], sizes=record["sizes"],
                          steps=record["step"])
        return result

    def save_log(self, out_dir):
        with open(os.path.join(out_dir, f"{self.name}.log"), "w", encoding="utf-8") as handle:
            handle.writelines(f"{t:9.3f} {line}\n" for t, line in self.lines)


class Scenario:
    """The jobs of one part on one cluster; every job stopped if the part fails."""

    def __init__(self, settings, env, workdir):
        self.settings, self.env, self.workdir = settings, env, workdir
        self.jobs = []

    def start(self, name, hosts, flock_args, t0):
        job = Job(name, self.workdir, hosts, flock_args, self.settings, self.env, t0)
        self.jobs.append(job)
        return job

    def close(self):
        for job in self.jobs:
            if job.proc.poll() is None:
                job.stop()
            job.save_log(self.settings.out_dir)


def sharing(scenario, policy):
    """Part (a), one policy: A on h1,h2; B submitted SUBMIT_DELAY_S later."""
    t0 = time.monotonic()
    a = scenario.start(f"A-{policy}", "h1:2\nh2:2\n", ["-np", "4"], t0)
    time.sleep(SUBMIT_DELAY_S)
    if policy == "elastic":  # B runs on what is free now, and grows later
        b = scenario.start("B-elastic", "h3:2\n", ["--min-np", "2", "--max-np", "4"], t0)
    else:  # a gang scheduler holds B until 4 slots are free: flockrun waits for them
        b = scenario.start("B-gang", "", ["--min-np", "4", "--max-np", "4"], t0)
    record_a = a.finish()
    # A's slots are free: the scheduler offers them to B.
    b.set_hosts("h3:2\nh1:2\nh2:2\n" if policy == "elastic" else "h1:2\nh2:2\n")
    record_b = b.finish()
    return {"policy": policy, "A": a.summary(record_a), "B": b.summary(record_b)}


def host_loss(scenario, cluster, settings):
    """Parts (b) and (c): undisturbed 6 ranks, then 6 ranks that lose h3 and get it back."""
    all_hosts = "h1:2\nh2:2\nh3:2\n"
    t0 = time.monotonic()
    calm = scenario.start("undisturbed", all_hosts, ["-np", "6"], t0)
    calm_record = calm.finish()
    t0 = time.monotonic()
    run = scenario.start("disturbed", all_hosts, ["-np", "6", "--min-np", "4"], t0)
    kill_epoch, back_after = settings.epochs // 4, max(1, settings.epochs // 5)
    run.wait_for(rf"epoch +{kill_epoch} +ranks 6")
    killed_at, killed = run.now(), kill_ranks_on(cluster, 3)
    run.wait_for(r"^flockrun: launch 1 failed")
    run.set_hosts("h1:2\nh2:2\n")  # the cluster manager drops the dead host
    dropped_at = run.now()
    run.wait_for(r"epoch +\d+ +ranks 4", count=back_after)
    run.set_hosts(all_hosts)  # ... and lists it again once it is back
    back_at = run.now()
    record = run.finish()
    return {"undisturbed": calm.summary(calm_record), "disturbed": run.summary(record),
            "killed_at": killed_at, "killed_ranks": killed, "dropped_at": dropped_at,
            "back_at": back_at, "kill_epoch": kill_epoch}


def kill_ranks_on(cluster, host):
    """SIGKILL the example's ranks inside emulated host `host`; how many there were."""
    pids = subprocess.run(["ip", "netns", "pids", cluster.namespace(host)], text=True,
                          capture_output=True, check=True, timeout=10).stdout.split()
    killed = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"elastic_digits.py" not in handle.read():
                    continue  # mpirun's daemon: the host itself stays up
            os.kill(int(pid), signal.SIGKILL)
            killed += 1
        except (FileNotFoundError, ProcessLookupError):
            pass
    return killed


# --- reading the timelines --------------------------------------------------------------

def slot_seconds(slots):
    """The integral of a job's slots over time."""
    return sum(k * (t2 - t1) for (t1, k, _), (t2, _, _) in zip(slots, slots[1:]))


def sizes_text(job):
    """'4 (0-80 s), 0 ...': each launch's ranks and from when to when."""
    parts = []
    for (t1, k, _), (t2, _, _) in zip(job["slots"], job["slots"][1:]):
        if k > 0:
            parts.append(f"{k} ({t1:.0f}-{t2:.0f} s)")
    return ", ".join(parts)


def first_training_after(job, t):
    later = [x for x in job["training"] if x >= t]
    return later[0] if later else float("nan")


def print_sharing(results):
    print("\n### (a) Two jobs of 4 ranks on 6 slots\n")
    print("| policy | A: start, end (s) | B: submit, start, end (s) | A elapsed | B wait "
          "| B elapsed | makespan | mean job time | slot use |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        a, b = r["A"], r["B"]
        makespan = max(a["end"], b["end"])
        used = (slot_seconds(a["slots"]) + slot_seconds(b["slots"])) / (SLOTS * makespan)
        mean = ((a["end"] - a["submit"]) + (b["end"] - b["submit"])) / 2
        print(f"| {r['policy']} | {a['start']:.1f}, {a['end']:.1f} | {b['submit']:.1f}, "
              f"{b['start']:.1f}, {b['end']:.1f} | {a['end'] - a['submit']:.1f} | "
              f"{b['start'] - b['submit']:.1f} | {b['end'] - b['submit']:.1f} | "
              f"{makespan:.1f} | {mean:.1f} | {used:.0%} |")
    print("\n| policy | job | ranks over time (s since A's submit) | world sizes | "
          "final accuracy |")
    print("| --- | --- | --- | --- | ---: |")
    for r in results:
        for key in ("A", "B"):
            job = r[key]
            print(f"| {r['policy']} | {key} | {sizes_text(job)} | {job['sizes']} | "
                  f"{job['accuracy']:.2%} |")
    print_launch_gaps([r[k] for r in results for k in ("A", "B")])


def print_launch_gaps(jobs):
    """Per launch: when it started and when it trained (a commit or a resume line)."""
    print("\n| job | launch | at (s) | ranks | hosts | training from (s) | gap (s) |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    for job in jobs:
        launches = [(t, k, h) for t, k, h in job["slots"] if k > 0]
        for number, (t, k, hosts) in enumerate(launches, start=1):
            trained = first_training_after(job, t)
            print(f"| {job['name']} | {number} | {t:.1f} | {k} | {hosts} | {trained:.1f} | "
                  f"{trained - t:.1f} |")


def print_host_loss(r):
    calm, run = r["undisturbed"], r["disturbed"]
    print("\n### (b) 6 ranks lose host h3 and get it back; (c) accuracy\n")
    print(f"h3's {r['killed_ranks']} ranks SIGKILLed at {r['killed_at']:.1f} s (after epoch "
          f"{r['kill_epoch']}), h3 dropped from discovery at {r['dropped_at']:.1f} s, "
          f"listed again at {r['back_at']:.1f} s.\n")
    print("| run | ranks over time (s since its start) | world sizes | steps | elapsed (s) "
          "| final accuracy |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for name, job in (("undisturbed", calm), ("disturbed", run)):
        print(f"| {name} | {sizes_text(job)} | {job['sizes']} | {job['steps']} | "
              f"{job['end'] - job['submit']:.1f} | {job['accuracy']:.2%} |")
    print(f"\nAccuracy difference (disturbed - undisturbed): "
          f"{(run['accuracy'] - calm['accuracy']) * 100:+.2f} points; time added: "
          f"{(run['end'] - run['submit']) - (calm['end'] - calm['submit']):+.1f} s")
    print_launch_gaps([calm, run])


# --- figures ------------------------------------------------------------------------------

def pyplot_or_none():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def step_series(slots, until):
    """x, y of a job's slots as a step function from 0 to `until`."""
    xs, ys = [0.0], [0]
    for t, k, _ in slots:
        xs.append(t)
        ys.append(k)
    xs.append(until)
    ys.append(ys[-1])
    return xs, ys


def sample(xs, ys, grid):
    """The step function's value at each grid time (the last change at or before it)."""
    out, i = [], 0
    for t in grid:
        while i + 1 < len(xs) and xs[i + 1] <= t:
            i += 1
        out.append(ys[i])
    return out


def starting(job, grid):
    """True at the grid times a launch of the job holds slots but does not train yet."""
    gaps = [(t, first_training_after(job, t)) for t, k, _ in job["slots"] if k > 0]
    return [any(t0 <= t < t1 for t0, t1 in gaps) for t in grid]


def plot_sharing(plt, results, path):
    until = max(max(r["A"]["end"], r["B"]["end"]) for r in results) + 2
    grid = [i * 0.1 for i in range(int(until * 10) + 1)]
    fig, axes = plt.subplots(len(results), 1, figsize=(8, 2.6 * len(results)), sharex=True)
    for ax, r in zip(list(axes) if len(results) > 1 else [axes], results):
        a = sample(*step_series(r["A"]["slots"], until), grid)
        b = sample(*step_series(r["B"]["slots"], until), grid)
        top = [x + y for x, y in zip(a, b)]
        ax.fill_between(grid, 0, a, step="post", color="tab:blue", alpha=0.7, label="job A")
        ax.fill_between(grid, a, top, step="post", color="tab:orange", alpha=0.7,
                        label="job B")
        # Slots held while a launch starts or restores: no training in them.
        for low, high, job in ((0, a, r["A"]), (a, top, r["B"])):
            ax.fill_between(grid, low, high, where=starting(job, grid), step="post",
                            facecolor="none", hatch="///", edgecolor="k", lw=0)
        ax.axvline(r["B"]["submit"], color="k", ls=":", lw=1)
        ax.text(r["B"]["submit"], SLOTS + 0.2, " B submitted", fontsize=8)
        makespan = max(r["A"]["end"], r["B"]["end"])
        ax.axvline(makespan, color="k", ls="--", lw=1)
        ax.set_ylim(0, SLOTS + 1)
        ax.set_ylabel("slots used")
        ax.set_title(f"{r['policy']}: makespan {makespan:.0f} s, "
                     f"B waits {r['B']['start'] - r['B']['submit']:.0f} s", fontsize=10)
        ax.axhline(SLOTS, color="grey", lw=0.8)
        ax.legend(loc="upper right", fontsize=8, title="/// starting", title_fontsize=7)
    (axes[-1] if len(results) > 1 else axes).set_xlabel("time since job A was submitted (s)")
    fig.suptitle("Two jobs of 4 ranks on 3 emulated hosts x 2 slots", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_host_loss(plt, r, path):
    fig, ax = plt.subplots(figsize=(8, 3))
    for name, style in (("undisturbed", dict(color="tab:green", ls="--")),
                        ("disturbed", dict(color="tab:red"))):
        job = r[name]
        xs, ys = step_series(job["slots"], job["end"])
        ax.step(xs, ys, where="post", label=f"{name} ({job['accuracy']:.1%})", **style)
    for t, what, y in ((r["killed_at"], "h3's ranks killed ", 6.9),
                       (r["dropped_at"], " h3 dropped", 6.4),
                       (r["back_at"], " h3 listed again", 6.9)):
        ax.axvline(t, color="k", ls=":", lw=1)
        ax.text(t, y, what, fontsize=8, ha="right" if what.endswith(" ") else "left")
    job = r["disturbed"]
    xs, ys = step_series(job["slots"], job["end"])
    grid = [i * 0.1 for i in range(int(job["end"] * 10) + 1)]
    ax.fill_between(grid, 0, sample(xs, ys, grid), where=starting(job, grid), step="post",
                    facecolor="none", hatch="///", edgecolor="tab:red", lw=0,
                    label="disturbed: starting, no training")
    ax.set_ylim(0, 7.5)
    ax.set_xlabel("time since the job started (s)")
    ax.set_ylabel("ranks")
    ax.set_title("One job on 3 emulated hosts x 2: a host lost and back (final accuracy)",
                 fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- driver -------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=["a", "b", "all"], default="all")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--step-ms", type=float, default=100.0)
    p.add_argument("--commit-every", type=int, default=10)
    p.add_argument("--out-dir", default="out/elastic")
    p.add_argument("--png-dir", default=None, help="default: --out-dir")
    p.add_argument("--from-json", metavar="FILE",
                   help="no jobs: the tables and PNGs of a saved elastic_scenario.json")
    return p.parse_args(argv)


def run_parts(args, cluster, workdir):
    env = cluster.environment({k: v for k, v in os.environ.items()
                               if not k.startswith("FLOCK_") and k != "PYTHONPATH"})
    env["FLOCK_QUIET"] = "1"
    results = {}
    scenario = Scenario(args, env, workdir)
    try:
        if args.part in ("a", "all"):
            results["a"] = [sharing(scenario, "elastic"), sharing(scenario, "gang")]
        if args.part in ("b", "all"):
            results["b"] = host_loss(scenario, cluster, args)
    finally:
        scenario.close()
    return results


def report(args, results):
    plt = pyplot_or_none()
    png_dir = args.png_dir or args.out_dir
    os.makedirs(png_dir, exist_ok=True)
    if "a" in results:
        print_sharing(results["a"])
        if plt is not None:
            plot_sharing(plt, results["a"], os.path.join(png_dir, "elastic-sharing.png"))
    if "b" in results:
        print_host_loss(results["b"])
        if plt is not None:
            plot_host_loss(plt, results["b"], os.path.join(png_dir, "elastic-host-loss.png"))
    if plt is None:
        print("\n(no PNG: matplotlib is not installed; apt-get install python3-matplotlib)")


def main():
    args = parse_args()
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as handle:
            report(args, json.load(handle)["results"])
        return
    reason = emu.namespaces_supported()
    if reason is not None:
        sys.exit(f"elastic_scenario: no emulated cluster here: {reason}")
    if emu.in_use() or emu.leftovers():
        sys.exit("elastic_scenario: the emulated cluster is in use (or left over: "
                 "python3 tools/cluster down); run this when it is free")
    os.makedirs(args.out_dir, exist_ok=True)
    args.out_dir = os.path.abspath(args.out_dir)
    began = time.monotonic()
    workdir = os.path.join(args.out_dir, "jobs")
    with emu.EmulatedCluster(hosts=3) as cluster:
        results = run_parts(args, cluster, workdir)
    settings = {"epochs": args.epochs, "step_ms": args.step_ms,
                "commit_every": args.commit_every, "submit_delay_s": SUBMIT_DELAY_S}
    with open(os.path.join(args.out_dir, "elastic_scenario.json"), "w",
              encoding="utf-8") as handle:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "settings": settings, "results": results}, handle, indent=1)
    report(args, results)
    print(f"\n{time.monotonic() - began:.0f} s in all; logs and JSON in {args.out_dir}")


if __name__ == "__main__":
    main()
