"""flockrun --elastic end to end on this machine: the real mpirun, the digits example.

One host (localhost) whose slot count a discovery script reads from a file is
how these tests take hosts away and give them back (issue 26's ``localhost:N``);
emulated hosts are in tests/python/cluster/test_elastic_hosts.py. Every run is
one session with a timeout; the training record (examples/python/elastic_digits.py
--json) is what the checks read: the world sizes, the step counter at each epoch's
end, the accuracy.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="needs OpenMPI's mpirun on PATH")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "python" / "elastic_digits.py"
TIMEOUT = 240
SAMPLES = 1347  # digits' training split (train_digits.load_data: 75 % of 1797)


class ElasticRun:
    """flockrun --elastic in its own session; its lines gathered as they come."""

    def __init__(self, args, env, cwd):
        self.proc = subprocess.Popen([sys.executable, "-m", "flockrun", *args], env=env,
                                     cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines, self.changed = [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()

    def text(self):
        with self.changed:
            return "\n".join(self.lines)

    def wait_for(self, pattern, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.changed:
            while not any(re.search(pattern, line) for line in self.lines):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    pytest.fail(f"no line matching {pattern!r}:\n" + "\n".join(self.lines))
                self.changed.wait(0.5)

    def finish(self, timeout=TIMEOUT):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail("flockrun --elastic did not finish:\n" + self.text())
        time.sleep(0.2)  # the reader thread takes the last lines
        return self.proc.returncode, self.text()

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def job(tmp_path, launcher_env):
    """start(flockrun options, example options) -> ElasticRun; hosts(text) sets discovery."""
    hosts_file = tmp_path / "hosts.txt"
    script = tmp_path / "hosts.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts_file}\n")
    script.chmod(0o755)
    runs = []

    def start(options, example=(), discovery=True):
        record = tmp_path / "record.json"
        args = ["--elastic", "--discovery-interval", "0.3", *options]
        if discovery:
            args += ["--host-discovery-script", str(script)]
        args += [sys.executable, str(EXAMPLE), "--json", str(record), *example]
        runs.append(ElasticRun(args, launcher_env, tmp_path))
        return runs[-1]

    start.hosts = lambda text: hosts_file.write_text(text)
    start.record = lambda: json.loads((tmp_path / "record.json").read_text())
    start.dir = tmp_path / ".flock-elastic"
    yield start
    for run in runs:
        run.stop()


def steps_continuous(record):
    """One entry per epoch, the step counter growing, and every epoch's samples taken
    exactly once over all launches (the count is committed with the model)."""
    history = record["history"]
    assert [e["epoch"] for e in history] == list(range(len(history))), history
    steps = [e["step"] for e in history]
    assert all(b > a for a, b in zip(steps, steps[1:])), steps
    assert [e["samples"] for e in history] == [SAMPLES * (i + 1) for i in range(len(history))]


def resumed_where_committed(out, commit_every=10):
    """Each relaunch resumed at the last commit before it: the last one every rank
    came back from, or the one after it that rank 0 wrote while a failed rank could
    no longer answer (it holds rank 0's state of that step, which is whole)."""
    committed, checked = None, 0
    for line in out.splitlines():
        done = re.search(r"committed step (\d+)", line)
        resumed = re.search(r"resumed at step (\d+)", line)
        if done:
            committed = int(done.group(1))
        elif resumed:
            assert committed <= int(resumed.group(1)) <= committed + commit_every, out
            checked += 1
    return checked


@pytest.mark.parametrize("optimizer", ["gradient_allreduce", "neighbor_allreduce",
                                       "hierarchical_neighbor_allreduce"])
def test_a_killed_rank_relaunches_from_the_last_commit(job, optimizer):
    job.hosts("localhost:3\n")
    code, out = job(["-np", "3", "-x", "FLOCK_LOCAL_SIZE=1"],
                    ["--epochs", "4", "--fail-at-step", "25", "--commit-every", "10",
                     "--print-commits", "--dist-optimizer", optimizer]).finish()
    assert code == 0, out
    assert "rank 2 (host" in out and "was killed by signal 9" in out
    assert "launch 1 failed (rank 2 on host localhost); relaunching" in out
    assert "launch 2 resumes from commit made by 3 ranks (launch 1)" in out
    record = job.record()
    assert record["sizes"] == [3]
    # 1347 samples over 3 ranks x 16: 28 full rounds and a short one per epoch.
    assert [e["step"] for e in record["history"]] == [29, 58, 87, 116]
    steps_continuous(record)
    assert resumed_where_committed(out) == 1
    assert record["accuracy"] > 0.9


def test_a_hung_rank_is_named_and_the_job_relaunched(job):
    job.hosts("localhost:3\n")
    started = time.monotonic()
    code, out = job(["-np", "3", "-x", "FLOCK_STALL_SHUTDOWN_S=3"],
                    ["--epochs", "2", "--fail-at-step", "20", "--fail-signal", "STOP",
                     "--print-commits"]).finish()
    assert code == 0, out
    assert "rank 2: SIGSTOP at step 20" in out
    assert re.search(r"stalled for 3 s: ranks? 2\b.*\[rank 2 is on host", out), out
    assert "launch 1 failed (rank 2 on host localhost)" in out
    steps_continuous(job.record())
    assert resumed_where_committed(out) == 1
    assert time.monotonic() - started < 120


def test_the_job_shrinks_and_grows_with_discovery_at_its_commits(job):
    job.hosts("localhost:3\n")
    run = job(["-np", "3", "--min-np", "2"],
              ["--epochs", "6", "--step-ms", "20", "--commit-every", "5", "--print-commits"])
    run.wait_for(r"epoch +0 +ranks 3")
    job.hosts("localhost:2\n")
    run.wait_for(r"epoch +\d+ +ranks 2")
    job.hosts("localhost:3\n")
    code, out = run.finish()
    assert code == 0, out
    assert "host localhost now offers 2 slots (the job uses 3)" in out
    assert "discovery offers 3 slots for the job's 2 ranks" in out
    assert "(0 relaunches after failures)" in out
    record = job.record()
    assert record["sizes"][:2] == [3, 2] and record["sizes"][-1] == 3, record["sizes"]
    steps_continuous(record)
    assert resumed_where_committed(out) == 2
    assert record["accuracy"] > 0.9


def test_reset_limit_gives_up(job):
    code, out = job(["-np", "2", "-H", "localhost:2", "--reset-limit", "0"],
                    ["--epochs", "2", "--fail-at-step", "5"], discovery=False).finish()
    assert code == 128 + signal.SIGKILL, out
    assert "giving up: launch 1 failed, and --reset-limit 0" in out


def test_discovery_that_prints_garbage_is_refused(job):
    job.hosts("localhost:2\nnot a host!\n")
    code, out = job(["-np", "2"]).finish()
    assert code == 2, out
    assert "printed 'not a host!' on line 2" in out


def test_no_hosts_waits_then_gives_up(job):
    job.hosts("")
    code, out = job(["-np", "2", "--elastic-timeout", "2"]).finish()
    assert code == 2, out
    assert "waiting for hosts" in out and "waited 2 s for --min-np 2 slots" in out


def test_a_commit_directory_that_is_not_writable_is_refused(job, tmp_path):
    (tmp_path / "plain-file").write_text("x")
    code, out = job(["-np", "2", "--elastic-dir", str(tmp_path / "plain-file" / "d")]).finish()
    assert code == 2, out
    assert "is not writable" in out and "launch 1" not in out


def test_a_damaged_commit_is_set_aside_and_the_one_before_used(job):
    job.hosts("localhost:2\n")
    options = ["-np", "2", "--reset-limit", "0"]
    code, out = job(options, ["--epochs", "3", "--fail-at-step", "75",
                              "--commit-every", "10"]).finish()
    assert code != 0 and "giving up" in out, out
    commits = sorted(job.dir.glob("commit-*.flock"))
    assert len(commits) == 2, commits
    newest = commits[-1]
    data = bytearray(newest.read_bytes())
    data[-10] ^= 0xFF
    newest.write_bytes(bytes(data))
    code, out = job(options, ["--epochs", "3"]).finish()
    assert code == 0, out
    assert f"commit {newest} is damaged" in out and (newest.parent / (newest.name + ".corrupt")).exists()
    assert "resumes from commit" in out
    steps_continuous(job.record())
