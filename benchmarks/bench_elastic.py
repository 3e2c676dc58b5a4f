"""Time an elastic job loses per failure and per scale-up, and what a commit costs.

    PATH=$PWD/.venv/bin:$PATH python benchmarks/bench_elastic.py      # ~9 min
        [--states digits resnet50] [--np 2 4] [--reps 3] [--out-dir out/elastic]

On localhost, under flockrun --elastic, benchmarks/elastic_state_job.py (a TorchState
of the digits model, or of ResNet-50's size: 25.6 M float32 parameters and their SGD
momentum, 205 MB committed) is

- failed: the last rank of launch 1 SIGKILLs itself; the loss is split into
  detection (the kill to flockrun's "launch 1 failed" line), relaunch (that line to
  every rank of launch 2 being ready to restore: mpirun, imports, bf.init, the
  state built) and restore (to every rank being inside ``train``: rank 0 reads and
  verifies the commit, broadcasts it, every rank loads it);
- scaled up (np N/2 -> N): the discovery file is rewritten; notice (to flockrun's
  request), the wait for the next commit (the job trains on meanwhile), then the
  time without training: exit and relaunch, and restore.

After each run the newest commit file is read as the restore would (open + read)
and into a buffer allocated beforehand, warm and with the page cache dropped
(``echo 3 > /proc/sys/vm/drop_caches``, as root). Rank 0's commit times (the
whole commit, serializing, writing + fsync) come from every commit of every run.
Medians over --reps runs; the raw records go to --out-dir/bench_elastic.json.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from line_log import LineLog  # beside this script

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "elastic_state_job.py")
EVENT = re.compile(r"^EV (\w+) rank=(\d+) launch=(\d+) t=([\d.]+)(.*)$")
# Per state: (step-ms, commit-every, fail-at-step, steps of the failure run).
SHAPES = {"digits": (50.0, 4, 10, 14), "resnet50": (50.0, 4, 10, 14)}
TIMEOUT_S = 300


class Job(LineLog):
    """flockrun --elastic with the job; each line kept with the time it arrived."""

    def __init__(self, argv, cwd):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLOCK_")}
        super().__init__(argv, cwd, env)

    def wait_for(self, pattern, count=1, timeout=TIMEOUT_S):
        return super().wait_for(pattern, count, timeout)

    def finish(self):
        try:
            self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError("the job did not finish:\n" + self.text()) from None
        self.wait_end()
        if self.proc.returncode != 0:
            raise RuntimeError(f"exit {self.proc.returncode}:\n" + self.text())

    def events(self):
        """Parsed EV lines: dicts with event, rank, launch, t and the key=value fields."""
        found = []
        for _, line in self.lines:
            match = EVENT.match(line)
            if match:
                record = {"event": match.group(1), "rank": int(match.group(2)),
                          "launch": int(match.group(3)), "t": float(match.group(4))}
                for item in match.group(5).split():
                    key, _, value = item.partition("=")
                    record[key] = float(value)
                found.append(record)
        return found


def start_job(workdir, hosts, flock_args, job_args):
    with open(os.path.join(workdir, "hosts.txt"), "w", encoding="utf-8") as handle:
        handle.write(hosts)
    script = os.path.join(workdir, "hosts.sh")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(f"#!/bin/sh\ncat {workdir}/hosts.txt\n")
    os.chmod(script, 0o755)
    argv = ["flockrun", "--elastic", "--discovery-interval", "0.5", "--host-discovery-script",
            script, "--elastic-dir", os.path.join(workdir, "commits"), *flock_args,
            sys.executable, JOB, *job_args]
    return Job(argv, workdir)


def latest(events, name, launch):
    """The last rank's time of an event in a launch (every rank has to get there)."""
    return max(e["t"] for e in events if e["event"] == name and e["launch"] == launch)


def launch_phases(events, launch, since):
    """A launch's start-up from `since`, on its slowest rank: spawn, imports, init, ready."""
    starts = [e for e in events if e["event"] == "start" and e["launch"] == launch]
    rank0 = next(e for e in events if e["event"] == "train" and e["launch"] == launch
                 and e["rank"] == 0)
    trains = [e for e in events if e["event"] == "train" and e["launch"] == launch]
    ready0 = next(e["t"] for e in events if e["event"] == "ready" and e["launch"] == launch
                  and e["rank"] == 0)
    # From rank 0 holding the verified bytes to the last rank having received them.
    received = max(e["t"] - e.get("apply_s", 0.0) for e in trains if e["rank"] != 0)
    return {"spawn_s": max(e["at"] for e in starts) - since,
            "imports_s": max(e["imported"] - e["at"] for e in starts),
            "init_s": latest(events, "init", launch) - max(e["imported"] for e in starts),
            "build_s": latest(events, "ready", launch) - latest(events, "init", launch),
            "relaunch_s": latest(events, "ready", launch) - since,
            "restore_s": latest(events, "train", launch) - latest(events, "ready", launch),
            "load_s": rank0.get("load_s", 0.0),
            "bcast_s": received - ready0 - rank0.get("load_s", 0.0),
            "apply_max_s": max(e.get("apply_s", 0.0) for e in trains)}


def failure_run(state, np_, workdir):
    step_ms, every, fail_at, steps = SHAPES[state]
    job = start_job(workdir, f"localhost:{np_}\n", ["-np", str(np_)],
                    ["--state", state, "--steps", str(steps), "--step-ms", str(step_ms),
                     "--commit-every", str(every), "--fail-at-step", str(fail_at)])
    failed = job.wait_for(r"^flockrun: launch 1 failed")
    relaunched = job.wait_for(r"^flockrun: launch 2:")
    job.finish()
    events = job.events()
    kill = next(e["t"] for e in events if e["event"] == "kill")
    record = {"kind": "failure", "state": state, "np": np_, "detect_s": failed - kill,
              "to_launch_s": relaunched - failed, "lost_steps": fail_at % every}
    record.update(launch_phases(events, 2, failed))
    record["total_s"] = latest(events, "train", 2) - kill
    return record, job


def scale_up_run(state, np_, workdir):
    step_ms, every, _, _ = SHAPES[state]
    small = np_ // 2
    job = start_job(workdir, f"localhost:{small}\n",
                    ["--min-np", str(small), "--max-np", str(np_)],
                    ["--state", state, "--steps", str(every * 4), "--step-ms", str(step_ms),
                     "--commit-every", str(every)])
    job.wait_for(r"^EV commit rank=0 launch=1")
    with open(os.path.join(workdir, "hosts.txt"), "w", encoding="utf-8") as handle:
        handle.write(f"localhost:{np_}\n")
    changed = time.time()
    asked = job.wait_for(r"asking launch 1 to end at its next commit")
    ended = job.wait_for(r"^flock\.elastic: ending launch 1 at commit")
    job.finish()
    events = job.events()
    record = {"kind": "scale-up", "state": state, "np": np_, "from_np": small,
              "notice_s": asked - changed, "to_commit_s": ended - asked}
    record.update(launch_phases(events, 2, ended))
    record["total_s"] = latest(events, "train", 2) - ended  # no training in this time
    return record, job


def drop_caches():
    """True when the page cache could be dropped (root, a writable /proc/sys)."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as handle:
            handle.write("3\n")
        return True
    except OSError:
        return False


def read_times(path):
    """Seconds to open+read() the file (what the restore does) and to read it into a
    buffer allocated beforehand, warm and after dropping the page cache."""
    size = os.path.getsize(path)

    def plain():
        began = time.perf_counter()
        with open(path, "rb") as handle:
            handle.read()
        return time.perf_counter() - began

    def into():
        buffer = bytearray(size)
        buffer[::4096] = bytes(len(buffer[::4096]))  # touch the pages beforehand
        began = time.perf_counter()
        with open(path, "rb", buffering=0) as handle:
            handle.readinto(buffer)
        return time.perf_counter() - began

    found = {"bytes": size, "read_warm_s": plain(), "readinto_warm_s": into()}
    found["dropped"] = drop_caches()
    found["read_cold_s"] = plain()
    drop_caches()
    found["readinto_cold_s"] = into()
    return found


def newest_commit(workdir):
    directory = os.path.join(workdir, "commits")
    names = sorted(n for n in os.listdir(directory) if re.match(r"commit-\d+\.flock$", n))
    return os.path.join(directory, names[-1])


def commit_times(job, state, np_):
    return [{"state": state, "np": np_, "commit_s": e["commit_s"],
             "serialize_s": e.get("serialize_s", 0.0), "save_s": e.get("save_s", 0.0)}
            for e in job.events() if e["event"] == "commit" and e["rank"] == 0
            and "save_s" in e]


def run_all(args):
    records, commits = [], []
    for rep in range(args.reps):
        for state in args.states:
            for np_ in args.np:
                for kind, run in (("failure", failure_run), ("scale-up", scale_up_run)):
                    with tempfile.TemporaryDirectory(prefix="bench-elastic-") as workdir:
                        began = time.monotonic()
                        record, job = run(state, np_, workdir)
                        record.update(read_times(newest_commit(workdir)), rep=rep,
                                      wall_s=time.monotonic() - began)
                        commits += commit_times(job, state, np_)
                        record["events"] = job.events()
                    records.append(record)
                    print(f"  rep {rep + 1}: {kind} {state} np {np_}: total "
                          f"{record['total_s']:.2f} s ({record['wall_s']:.0f} s run)",
                          flush=True)
    return records, commits


def median(rows, key):
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else float("nan")


def print_tables(records, commits):
    print("\n### Failure: a rank SIGKILLed (medians; seconds)\n")
    cols = ["detect_s", "relaunch_s", "spawn_s", "imports_s", "init_s", "build_s",
            "restore_s", "load_s", "bcast_s", "apply_max_s", "total_s"]
    _table(records, "failure", cols, "detection + relaunch", ("detect_s", "relaunch_s"))
    print("\n### Scale-up: np N/2 -> N (medians; seconds)\n")
    cols = ["notice_s", "to_commit_s", "relaunch_s", "spawn_s", "imports_s", "init_s",
            "build_s", "restore_s", "load_s", "bcast_s", "apply_max_s", "total_s"]
    _table(records, "scale-up", cols, None, ())
    print("\n### Restore against reading the commit file (medians; seconds)\n")
    print("| state | np | MB | restore | of which load (rank 0) | read() warm | read() cold "
          "| readinto warm | readinto cold | cache dropped |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for (state, np_), rows in _groups([r for r in records if r["kind"] == "failure"]):
        print(f"| {state} | {np_} | {median(rows, 'bytes') / 1e6:.2f} | "
              f"{median(rows, 'restore_s'):.3f} | {median(rows, 'load_s'):.3f} | "
              f"{median(rows, 'read_warm_s'):.3f} | {median(rows, 'read_cold_s'):.3f} | "
              f"{median(rows, 'readinto_warm_s'):.3f} | "
              f"{median(rows, 'readinto_cold_s'):.3f} | "
              f"{'yes' if all(r['dropped'] for r in rows) else 'no'} |")
    print("\n### Commit on rank 0 (medians over every commit; seconds)\n")
    print("| state | np | commits | commit | pack + copy for restore() | write + fsync |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for (state, np_), rows in _groups(commits):
        print(f"| {state} | {np_} | {len(rows)} | {median(rows, 'commit_s'):.3f} | "
              f"{median(rows, 'serialize_s'):.3f} | {median(rows, 'save_s'):.3f} |")


def _groups(rows):
    keys = sorted({(r["state"], r["np"]) for r in rows})
    return [(key, [r for r in rows if (r["state"], r["np"]) == key]) for key in keys]


def _table(records, kind, cols, extra_name, extra_keys):
    names = [c[:-2].replace("_", " ") for c in cols] + ([extra_name] if extra_name else [])
    print("| state | np | runs | " + " | ".join(names) + " |")
    print("| --- | ---: | ---: |" + " ---: |" * len(names))
    for (state, np_), rows in _groups([r for r in records if r["kind"] == kind]):
        cells = [f"{median(rows, c):.2f}" for c in cols]
        if extra_name:
            cells.append(f"{statistics.median(sum(r[k] for k in extra_keys) for r in rows):.2f}")
        size = f"{rows[0]['from_np']}→{np_}" if kind == "scale-up" else str(np_)
        print(f"| {state} | {size} | {len(rows)} | " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", nargs="+", choices=sorted(SHAPES), default=["digits", "resnet50"])
    p.add_argument("--np", nargs="+", type=int, default=[2, 4])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out-dir", default="out/elastic")
    p.add_argument("--from-json", metavar="FILE", help="print the tables of a saved run")
    args = p.parse_args()
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as handle:
            saved = json.load(handle)
        print_tables(saved["runs"], saved["commits"])
        return
    began = time.monotonic()
    records, commits = run_all(args)
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "bench_elastic.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "runs": records, "commits": commits}, handle, indent=1)
    print_tables(records, commits)
    print(f"\nraw records: {path}; {time.monotonic() - began:.0f} s in all")


if __name__ == "__main__":
    main()
