"""A rank that fails ends the whole job quickly; the user sees its own output and one
summary from flockrun, not the other ranks' reports or mpirun's boxes."""

import os
import re
import shutil
import sys
import textwrap
import time

import pytest

from jobs import run_session

FLOCKRUN = shutil.which("flockrun")
pytestmark = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not installed on PATH")


def test_exception_on_rank_2_of_4_ends_the_job_within_30s(tmp_path):
    script = tmp_path / "fails_on_rank_2.py"
    script.write_text(textwrap.dedent("""
        import time, torch, flock.torch as bf
        bf.init()
        bf.allreduce(torch.ones(1))
        if bf.rank() == 2:
            raise RuntimeError("deliberate failure on rank two")
        bf.allreduce(torch.ones(1))  # the other ranks wait here for rank 2
        time.sleep(120)
    """))
    start = time.monotonic()
    result = run_session([FLOCKRUN, "-np", "4", sys.executable, str(script)], timeout=90)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    assert elapsed < 30, "the job took {:.1f}s to end".format(elapsed)
    output = result.stdout + result.stderr
    assert "Traceback" in output and "deliberate failure on rank two" in output
    # Rank 2's traceback, flockrun's summary ending with it, and nothing from the others.
    assert "FlockAbortedError" not in output and "MPI_ABORT" not in output, output
    assert re.search(r"^flockrun: rank 2 \(host \S+\) ended the job with MPI_Abort \(code 1\); "
                     r"mpirun stopped the other ranks$", result.stderr, re.M), result.stderr
    tail = result.stderr.split("flockrun: last lines of rank 2:\n", 1)[1].splitlines()
    assert "    RuntimeError: deliberate failure on rank two" in tail
    assert "    flock: uncaught exception on rank 2; ending every rank of the job" in tail


def test_successful_job_exits_zero(tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("import flock.torch as bf, torch\nbf.init()\n"
                      "assert bf.allreduce(torch.ones(1), op='sum').item() == bf.size()\n")
    result = run_session([FLOCKRUN, "-np", "3", sys.executable, str(script)], timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr


def test_sys_exit_with_failure_status_on_one_rank_ends_the_job(tmp_path):
    script = tmp_path / "exits_on_rank_1.py"
    script.write_text(textwrap.dedent("""
        import sys, time, torch, flock.torch as bf
        bf.init()
        if bf.rank() == 1:
            sys.exit(3)
        bf.allreduce(torch.ones(1))  # would wait forever for rank 1
        time.sleep(120)
    """))
    start = time.monotonic()
    result = run_session([FLOCKRUN, "-np", "3", sys.executable, str(script)], timeout=90)
    assert time.monotonic() - start < 30
    assert result.returncode == 3, result.stdout + result.stderr
    assert "rank 1 exits with status 3" in result.stderr


def run_failing(tmp_path, code, *flockrun_args, num_proc=4):
    """(result, seconds) of a job whose rank 1 fails as ``code`` says."""
    script = tmp_path / "fails.py"
    script.write_text(textwrap.dedent("""
        import os, signal, time, torch, flock.torch as bf
        bf.init()
        bf.allreduce(torch.ones(1))
        if bf.rank() == 1:
            {}
        bf.allreduce(torch.ones(1), name="waits.for.rank1")
        time.sleep(120)
    """).format(code))
    start = time.monotonic()
    result = run_session([FLOCKRUN, *flockrun_args, "-np", str(num_proc), sys.executable,
                          str(script)], timeout=90)
    return result, time.monotonic() - start


def test_a_rank_that_dies_silently_gets_a_two_line_report(tmp_path):
    # Before: 45 lines (three survivors' tracebacks and MPI_Abort, mpirun's boxes).
    result, elapsed = run_failing(tmp_path, "os._exit(1)")
    assert result.returncode == 1 and elapsed < 30
    assert result.stdout == ""
    assert re.fullmatch(r"flockrun: rank 1 \(host \S+\) exited with status 1; mpirun stopped "
                        r"the other ranks\nflockrun: rank 1 printed nothing\n",
                        result.stderr), result.stderr


def test_a_rank_killed_by_a_signal_is_named_with_the_signal(tmp_path):
    result, elapsed = run_failing(
        tmp_path, "print('rank 1 before the kill', flush=True); "
                  "os.kill(os.getpid(), signal.SIGKILL)")
    assert result.returncode == 128 + 9 and elapsed < 30
    assert result.stderr.splitlines() == [
        result.stderr.splitlines()[0],
        "flockrun: last lines of rank 1:",
        "    rank 1 before the kill"]
    assert re.fullmatch(r"flockrun: rank 1 \(host \S+\) was killed by signal 9 \(SIGKILL\); "
                        r"mpirun stopped the other ranks", result.stderr.splitlines()[0])


def test_verbose_shows_what_the_other_ranks_and_mpirun_said(tmp_path):
    result, _ = run_failing(tmp_path, "os._exit(1)", "--verbose", num_proc=3)
    assert result.returncode == 1
    for rank in (0, 2):  # terminated while waiting for rank 1, each said so in one line
        assert ("flock: rank {} ended by signal 15 (SIGTERM): the job is being terminated"
                .format(rank)) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert "mpirun detected that one or more processes exited with non-zero status" in \
        result.stderr
