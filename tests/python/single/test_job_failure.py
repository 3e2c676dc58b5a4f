"""A rank that raises ends the whole job quickly, with its traceback shown."""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

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
    result = subprocess.run([FLOCKRUN, "-np", "4", sys.executable, str(script)],
                            capture_output=True, text=True, timeout=90)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    assert elapsed < 30, "the job took {:.1f}s to end".format(elapsed)
    output = result.stdout + result.stderr
    assert "Traceback" in output and "deliberate failure on rank two" in output


def test_successful_job_exits_zero(tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("import flock.torch as bf, torch\nbf.init()\n"
                      "assert bf.allreduce(torch.ones(1), op='sum').item() == bf.size()\n")
    result = subprocess.run([FLOCKRUN, "-np", "3", sys.executable, str(script)],
                            capture_output=True, text=True, timeout=90)
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
    result = subprocess.run([FLOCKRUN, "-np", "3", sys.executable, str(script)],
                            capture_output=True, text=True, timeout=90)
    assert time.monotonic() - start < 30
    assert result.returncode == 3, result.stdout + result.stderr
    assert "rank 1 exits with status 3" in result.stderr
