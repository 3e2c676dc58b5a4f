"""A test that fails on one rank of an MPI test job ends the whole job in seconds.

Each job here is built so that, without the abort, the other ranks would wait for the
failed rank in a collective until pytest-timeout (300 s) or forever: the job must end
well within JOB_LIMIT_S, non-zero, naming the test and the rank. Python: mpi_pytest.py's
AbortOnFailure; C++: AbortOnFailure in tests/cpp/mpi/mpi_test_main.cc, through
flock_mpi_failure_probe (one test that fails on purpose, built next to flock_mpi_tests).
"""

import re
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jobs import run_session

ROOT = Path(__file__).resolve().parents[3]
MPI_PYTEST = ROOT / "tests" / "python" / "mpi_pytest.py"
CPP_TESTS = ROOT / "build" / "tests" / "cpp"
FLOCKRUN = shutil.which("flockrun")
MPIEXEC = shutil.which("mpiexec")
JOB_LIMIT_S = 90  # run_session ends the job's whole session after this
ENDS_WITHIN_S = 30  # a start-up of 3 ranks on 2 shared cores takes 2-8 s

HEADER = """
import pytest, torch
import flock.torch as bf

bf.init()
"""


def run_pytest_job(tmp_path, tests, num_proc=3):
    """(result, seconds) of mpi_pytest.py over ``tests`` at num_proc ranks."""
    if FLOCKRUN is None:
        pytest.skip("flockrun is not installed on PATH")
    (tmp_path / "test_job.py").write_text(HEADER + textwrap.dedent(tests))
    argv = [FLOCKRUN, "-np", str(num_proc), sys.executable, str(MPI_PYTEST),
            str(tmp_path / "reports"), "test_job.py", "--timeout=300"]
    start = time.monotonic()
    result = run_session(argv, timeout=JOB_LIMIT_S, cwd=str(tmp_path))
    return result, time.monotonic() - start


def abort_line(rank, test):
    return re.compile(r"^mpi_pytest: rank {} FAILED test_job\.py::{}; MPI_Abort ends every "
                      r"rank of the job$".format(rank, re.escape(test)), re.M)


def test_an_assertion_failing_on_rank_1_of_3_ends_the_job(tmp_path):
    result, elapsed = run_pytest_job(tmp_path, """
        def test_fails_on_rank_1():
            if bf.rank() == 1:
                print("rank 1 says this before failing")
                assert bf.rank() == 0, "deliberate failure on rank 1"
            bf.allreduce(torch.ones(1), name="after.failure")  # ranks 0, 2 wait for rank 1

        def test_next():
            bf.allreduce(torch.ones(1), name="next")
    """)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert elapsed < ENDS_WITHIN_S, "the job took {:.1f}s to end".format(elapsed)
    assert abort_line(1, "test_fails_on_rank_1 (call)").search(result.stderr), output
    # Rank 1's report reached the terminal: its traceback and what the test printed.
    assert "==== rank 1: test_job.py::test_fails_on_rank_1 (call) ====" in result.stderr
    assert "AssertionError: deliberate failure on rank 1" in result.stderr
    assert "rank 1 says this before failing" in result.stderr
    # The ranks mpirun terminated neither report a failure nor abort a second time.
    assert len(re.findall(r"^mpi_pytest: rank \d+ FAILED", result.stderr, re.M)) == 1, output


def test_a_fixture_failing_in_teardown_on_rank_2_ends_the_job(tmp_path):
    result, elapsed = run_pytest_job(tmp_path, """
        @pytest.fixture
        def exchange_after():
            yield
            if bf.rank() == 2:
                raise RuntimeError("deliberate teardown failure on rank 2")
            bf.allreduce(torch.ones(1), name="teardown.exchange")  # waits for rank 2

        def test_passes(exchange_after):
            pass

        def test_next():
            bf.allreduce(torch.ones(1), name="next")
    """)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert elapsed < ENDS_WITHIN_S, "the job took {:.1f}s to end".format(elapsed)
    assert abort_line(2, "test_passes (teardown)").search(result.stderr), output
    assert "RuntimeError: deliberate teardown failure on rank 2" in result.stderr


def test_expected_exceptions_skips_and_xfails_on_some_ranks_are_not_failures(tmp_path):
    result, _ = run_pytest_job(tmp_path, """
        def test_raises_on_rank_1_as_expected():
            bf.allreduce(torch.ones(1), name="before.raises")
            if bf.rank() == 1:
                with pytest.raises(ValueError, match="expected on rank 1"):
                    raise ValueError("expected on rank 1")

        def test_skipped_on_rank_2():
            bf.allreduce(torch.ones(1), name="before.skip")
            if bf.rank() == 2:
                pytest.skip("rank 2 skips after the collective")

        @pytest.mark.xfail(reason="fails on rank 0 only, as expected", strict=False)
        def test_xfails_on_rank_0():
            bf.allreduce(torch.ones(1), name="before.xfail")
            assert bf.rank() != 0

        def test_last():
            assert bf.allreduce(torch.ones(1), op="sum", name="last").item() == bf.size()
    """)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "MPI_Abort" not in output
    assert re.search(r"\b3 passed, 1 xfailed in ", result.stdout, re.M), output  # rank 0


def test_a_single_rank_job_reports_every_failure_instead_of_aborting(tmp_path):
    result, _ = run_pytest_job(tmp_path, """
        def test_fails():
            assert False, "deliberate failure at one rank"

        def test_runs_after_the_failure():
            pass
    """, num_proc=1)
    assert result.returncode != 0
    assert "MPI_Abort" not in result.stdout + result.stderr
    assert re.search(r"\b1 failed, 1 passed in ", result.stdout, re.M), result.stdout


def test_a_gtest_failing_on_one_rank_of_3_ends_the_mpi_test_binary(tmp_path):
    probe = CPP_TESTS / "flock_mpi_failure_probe"
    if MPIEXEC is None or not (CPP_TESTS / "flock_mpi_tests").exists():
        pytest.skip("no C++ build in {} (scripts/setup.sh builds it)".format(CPP_TESTS.parent))
    assert probe.exists(), "the build has flock_mpi_tests but not flock_mpi_failure_probe"
    argv = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "--mca", "mpi_yield_when_idle", "1", "-np", "3", str(probe)]
    start = time.monotonic()
    result = run_session(argv, timeout=JOB_LIMIT_S, cwd=str(tmp_path))
    elapsed = time.monotonic() - start
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert elapsed < ENDS_WITHIN_S, "the job took {:.1f}s to end".format(elapsed)
    assert "deliberate failure on rank 2" in output  # GoogleTest's report of the failure
    assert re.search(r"^\[rank 2\] FAILED DeliberateFailure\.OnTheLastRankWhileTheOthersWaitForIt;"
                     r" MPI_Abort ends every rank of the job$", result.stderr, re.M), output
