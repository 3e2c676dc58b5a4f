"""Engine behaviour that needs its own job: stall warnings and errors (set by
environment at init), a rank that dies, and flockrun's timeline option."""

import glob
import json
import shutil
import sys
import textwrap
import time

import pytest

from jobs import run_session

FLOCKRUN = shutil.which("flockrun")
pytestmark = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not installed on PATH")


def run_job(tmp_path, np, code, *flockrun_args, env=None, timeout=90):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    start = time.monotonic()
    result = run_session([FLOCKRUN, "-np", str(np), *flockrun_args, sys.executable, str(script)],
                         timeout=timeout, env=env)
    return result, time.monotonic() - start


def test_stall_warning_names_the_tensor_and_the_missing_ranks(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOCK_STALL_WARNING_S", "1")
    result, _ = run_job(tmp_path, 3, """
        import time, torch, flock.torch as bf
        bf.init()
        if bf.rank() == 2:
            time.sleep(3)  # ranks 0 and 1 wait for rank 2 meanwhile
        bf.allreduce(torch.ones(2), name="late.grad")
        print("done", bf.rank())
    """)
    assert result.returncode == 0, result.stderr
    assert "'late.grad' has waited" in result.stderr
    assert "submitted by ranks 0, 1 but not by ranks 2" in result.stderr


def test_stall_shutdown_turns_the_stall_into_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOCK_STALL_WARNING_S", "1")
    monkeypatch.setenv("FLOCK_STALL_SHUTDOWN_S", "2")
    result, _ = run_job(tmp_path, 2, """
        import sys, time, torch, flock.torch as bf
        bf.init()
        if bf.rank() == 0:
            try:
                bf.allreduce(torch.ones(2), name="never.on.rank1")
            except bf.FlockAbortedError as error:
                sys.stdout.write("raised: {}\\n".format(error))  # one write: ranks share stdout
        else:
            time.sleep(3)  # past rank 0's stall limit
        bf.allreduce(torch.ones(2), name="afterwards")  # the engine still works
        sys.stdout.write("ok {}\\n".format(bf.rank()))
    """)
    assert result.returncode == 0, result.stderr
    assert "raised: 'never.on.rank1' stalled" in result.stdout
    assert "ranks 1 never submitted it" in result.stdout
    assert "ok 0" in result.stdout and "ok 1" in result.stdout


def test_a_dead_rank_ends_the_job_within_30s(tmp_path):
    result, elapsed = run_job(tmp_path, 4, """
        import os, time, torch, flock.torch as bf
        bf.init()
        bf.allreduce(torch.ones(1))
        if bf.rank() == 2:
            os._exit(1)  # dies without a word: no exception, no finalize
        bf.allreduce(torch.ones(1), name="waits.for.rank2")
        time.sleep(60)
    """, "--verbose")
    assert result.returncode != 0
    assert elapsed < 30, "the job took {:.1f}s to end".format(elapsed)
    # The survivors' pending op fails with an error that says what happened (in one line
    # per rank, which flockrun shows only with --verbose), and flockrun names rank 2.
    assert "the job is being terminated" in result.stderr, result.stderr
    assert "flockrun: rank 2 (host " in result.stderr, result.stderr


def test_flockrun_timeline_option_writes_one_trace_per_rank(tmp_path):
    trace = tmp_path / "trace.json"
    result, _ = run_job(tmp_path, 2, """
        import torch, flock.torch as bf
        bf.init()
        for i in range(3):
            bf.allreduce(torch.ones(8), name="traced")
    """, "--timeline-filename", str(trace))
    assert result.returncode == 0, result.stderr
    files = sorted(glob.glob(str(tmp_path / "trace.rank*.json")))
    assert [f.rsplit("/", 1)[1] for f in files] == ["trace.rank0.json", "trace.rank1.json"]
    for f in files:
        events = json.load(open(f))
        rows = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        traced = [e for e in events if e.get("name") == "COMMUNICATE" and rows[e["tid"]] == "traced"]
        assert len(traced) == 3


def test_neighbors_that_shut_down_first_still_complete_a_slower_rank(tmp_path):
    # Ring 0 -> 1 -> 2 -> 0 without the topology check: ranks 0 and 1 finish and
    # shut down while rank 2 has not called yet; what they sent still completes
    # rank 2's call. Then a call that waits for a rank that left fails, no hang.
    result, _ = run_job(tmp_path, 3, """
        import sys, time, torch, flock.torch as bf
        from flock import topology as tu
        bf.init()
        bf.set_topology(tu.RingGraph(3, connect_style=2))
        x = torch.full((100000,), float(bf.rank() + 1))  # travels in a lane
        if bf.rank() == 2:
            time.sleep(1.5)
        y = bf.neighbor_allreduce(x, enable_topo_check=False, name="last")
        assert torch.allclose(y, (x + (bf.rank() - 1) % 3 + 1) / 2), y[:3]
        if bf.rank() == 2:
            try:
                bf.neighbor_allreduce(x, self_weight=0.5, src_weights={0: 0.5}, dst_weights=[],
                                      name="too.late")
            except bf.FlockAbortedError as error:
                sys.stdout.write("raised: {}\\n".format(error))
        sys.stdout.write("done {}\\n".format(bf.rank()))
        bf.shutdown()
    """)
    assert result.returncode == 0, result.stderr
    assert sorted(line for line in result.stdout.splitlines() if line.startswith("done")) == [
        "done 0", "done 1", "done 2"], result.stdout
    assert "raised: neighbor_allreduce 'too.late': rank 0 shut down" in result.stdout, result.stdout
