"""End-to-end tests: ``python -m flockrun`` driving the real mpirun.

The ranks run tiny plain-Python programs (no flock import) that print what
they see as "R <rank> <size> <value>" lines. Every flockrun is started in
its own session with a timeout; on timeout the whole session (flockrun,
mpirun and the ranks) is killed and the test fails saying so.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from flockrun.machine import local_core_count

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="needs OpenMPI's mpirun on PATH")

TIMEOUT = 30  # seconds; a healthy run takes well under one

# Writes one line per rank: R <rank> <size> <repr of the asked-for value>.
# One os.write per line: print() makes one write per piece when
# PYTHONUNBUFFERED is set, and mpirun then interleaves the ranks' pieces.
SHOW = ("import os, sys; e = os.environ; "
        "os.write(1, ('R %s %s %r\\n' % (e['OMPI_COMM_WORLD_RANK'], "
        "e['OMPI_COMM_WORLD_SIZE'], {})).encode())")


def show(expression):
    """A rank command printing ``expression`` (Python) with its rank."""
    return [sys.executable, "-c", SHOW.format(expression)]


def flockrun(args, env, cwd=None, timeout=TIMEOUT):
    """Run flockrun with args; return (exit code, stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "flockrun", *args],
                            env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_session(proc)
        out, err = proc.communicate()
        pytest.fail(f"flockrun {args} did not finish within {timeout} s\n"
                    f"stdout:\n{out}\nstderr:\n{err}")
    return proc.returncode, out, err


def stop_session(proc):
    """Stop flockrun and everything it started (its session).

    SIGTERM first, so flockrun and mpirun clean up; then SIGKILL to every
    process of the session, ranks included (mpirun puts each rank in a
    process group of its own, so killpg alone would miss them).
    """
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for pid in _session_members(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _session_members(sid):
    """Ids of the live processes in session sid (Linux /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            continue  # not a process, or it just exited
        if entry.isdigit() and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def rank_lines(out):
    """{rank: (size, value)} from the "R ..." lines of the output."""
    lines = [line.split(" ", 3) for line in out.splitlines()
             if line.startswith("R ")]
    return {int(rank): (int(size), value) for _, rank, size, value in lines}


def test_starts_the_ranks(launcher_env):
    code, out, err = flockrun(["-np", "2", *show("'ok'")], launcher_env)
    assert code == 0, err
    assert rank_lines(out) == {0: (2, "'ok'"), 1: (2, "'ok'")}


def test_flock_variables_reach_the_ranks(launcher_env):
    launcher_env["FLOCK_FOO"] = "from flockrun"
    code, out, err = flockrun(["-np", "2", *show("e.get('FLOCK_FOO')")],
                              launcher_env)
    assert code == 0, err
    assert {v for _, v in rank_lines(out).values()} == {"'from flockrun'"}


def test_user_exports_reach_the_ranks(launcher_env):
    launcher_env["BAZ"] = "here"
    code, out, err = flockrun(
        ["-np", "2", "-x", "BAR=1", "-x", "BAZ",
         *show("(e.get('BAR'), e.get('BAZ'))")], launcher_env)
    assert code == 0, err
    assert {v for _, v in rank_lines(out).values()} == {"('1', 'here')"}


def test_timeline_filename_reaches_the_ranks_as_absolute_path(
        launcher_env, tmp_path):
    code, out, err = flockrun(
        ["-np", "2", "--timeline-filename", "t.json",
         *show("e.get('FLOCK_TIMELINE')")], launcher_env, cwd=tmp_path)
    assert code == 0, err
    expected = repr(str(tmp_path / "t.json"))
    assert {v for _, v in rank_lines(out).values()} == {expected}


def test_program_arguments_pass_untouched(launcher_env):
    code, out, err = flockrun(
        ["-np", "1", *show("sys.argv[1:]"), "--lr", "0.1", "-x", "-np"],
        launcher_env)
    assert code == 0, err
    assert rank_lines(out) == {0: (1, "['--lr', '0.1', '-x', '-np']")}


def test_exit_code_of_the_ranks_is_returned(launcher_env):
    code, _, err = flockrun(
        ["-np", "2", sys.executable, "-c", "raise SystemExit(3)"],
        launcher_env)
    assert code == 3, err


def test_one_failing_rank_fails_the_run(launcher_env):
    # Rank 0 succeeds, rank 1 exits with 5.
    program = ("import os, sys; "
               "sys.exit(5 * int(os.environ['OMPI_COMM_WORLD_RANK']))")
    code, _, err = flockrun(["-np", "2", sys.executable, "-c", program],
                            launcher_env)
    assert code == 5, err


def test_more_ranks_than_cores_run(launcher_env):
    num_proc = local_core_count() + 1
    if num_proc > 9:
        pytest.skip("too many cores to oversubscribe cheaply")
    code, out, err = flockrun(["-np", str(num_proc), *show("'ok'")],
                              launcher_env)
    assert code == 0, err
    assert sorted(rank_lines(out)) == list(range(num_proc))


def test_dry_run_prints_and_does_not_launch(launcher_env, tmp_path):
    marker = tmp_path / "launched"
    code, out, err = flockrun(
        ["-np", "2", "--dry-run", "touch", str(marker)], launcher_env)
    assert code == 0, err
    assert out.split()[0] == shutil.which("mpirun", path=launcher_env["PATH"])
    assert out.split()[-2:] == ["touch", str(marker)]
    assert not marker.exists()


def test_verbose_prints_the_command_line_to_stderr(launcher_env):
    code, out, err = flockrun(["-np", "1", "--verbose", *show("'ok'")],
                              launcher_env)
    assert code == 0, err
    assert "mpirun" in err.splitlines()[0] and "-np 1" in err
    assert rank_lines(out) == {0: (1, "'ok'")}


def test_missing_mpirun_exits_2(launcher_env, tmp_path):
    launcher_env["PATH"] = str(tmp_path)  # an empty directory
    code, out, err = flockrun(["-np", "2", *show("'ok'")], launcher_env)
    assert code == 2 and out == ""
    assert err.startswith("flockrun: error: mpirun not found on PATH")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT],
                         ids=["SIGTERM", "SIGINT"])
def test_signals_are_forwarded_and_the_ranks_stop(launcher_env, signum):
    sleeper = ("import os, time; os.write(1, b'R %d\\n' % os.getpid()); "
               "time.sleep(60)")
    proc = subprocess.Popen(
        [sys.executable, "-m", "flockrun", "-np", "2", sys.executable, "-c",
         sleeper], env=launcher_env, stdout=subprocess.PIPE, text=True,
        stderr=subprocess.DEVNULL, start_new_session=True)
    # If the ranks never report, stop the whole session so readline returns.
    watchdog = threading.Timer(TIMEOUT, stop_session, (proc,))
    watchdog.start()
    try:
        pids = [int(proc.stdout.readline().split()[1]) for _ in range(2)]
        proc.send_signal(signum)  # to flockrun only, not its session
        code = proc.wait(timeout=TIMEOUT)
    except (subprocess.TimeoutExpired, IndexError, ValueError):
        stop_session(proc)
        pytest.fail("flockrun did not start, or did not stop, its ranks "
                    f"within {TIMEOUT} s of signal {signum}")
    finally:
        watchdog.cancel()
        proc.stdout.close()
    assert code != 0
    assert not [pid for pid in pids if _alive(pid)], "ranks left running"


def _alive(pid, grace=5.0):
    """Is pid still running after up to ``grace`` seconds?"""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.05)
    return True
