"""flockrun.processes on real processes: sessions, setsid'd children, SIGTERM then SIGKILL.

Each test starts small Python processes in a session of their own (as
flock-interactive starts mpirun and the controller) and ends them all.
"""

import os
import select
import signal
import subprocess
import sys
import time

import pytest

from flockrun.processes import (ProcessId, children_outside, end_processes, identify,
                                is_alive, session_members, signal_all)

# A session leader that forks a child in its session and another that leaves it
# (setsid, as ipengine's nanny does), prints both pids, then sleeps. With
# "ignore", all three ignore SIGTERM.
FAMILY = """
import os, signal, sys, time
if sys.argv[1] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
def child(leave):
    ready, tell = os.pipe()
    pid = os.fork()
    if pid == 0:
        if leave:
            os.setsid()
        os.write(tell, b"x")  # the parent reports the pid only once this is done
        time.sleep(60)
        os._exit(0)
    os.read(ready, 1)
    return pid
print(child(False), child(True), flush=True)
time.sleep(60)
"""


TIMEOUT = 30  # seconds for FAMILY to report its pids; it takes milliseconds


def read_line(pipe, timeout):
    """One line from pipe; the test fails if none is ready within timeout seconds."""
    ready, _, _ = select.select([pipe], [], [], timeout)
    if not ready:
        pytest.fail(f"no line within {timeout} s")
    return pipe.readline()


@pytest.fixture
def family(request):
    """Start FAMILY; yield (leader, in-session child, setsid'd child) as ProcessIds."""
    mode = getattr(request, "param", "default")
    proc = subprocess.Popen([sys.executable, "-c", FAMILY, mode], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    pids = [proc.pid]
    try:
        pids += [int(p) for p in read_line(proc.stdout, TIMEOUT).split()]
        ids = [identify(pid) for pid in pids]
        assert None not in ids and len(ids) == 3
        yield ids
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # a child whose pid never came
        except ProcessLookupError:
            pass
        proc.stdout.close()
        proc.wait(timeout=10)


def test_session_members_and_children_that_left(family):
    leader, inside, outside = family
    members = session_members(leader)
    assert members == {leader, inside}
    assert children_outside(members) == {outside}


def test_members_are_found_after_the_leader_died(family):
    leader, inside, _ = family
    os.kill(leader.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while is_alive(leader):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert session_members(leader) == {inside}


def test_a_reused_pid_is_not_the_recorded_process(family):
    leader, _, _ = family
    impostor = ProcessId(leader.pid, leader.start_time + 1)
    assert not is_alive(impostor)
    assert session_members(impostor) == set()
    signal_all([impostor], signal.SIGKILL)  # must not touch the real one
    assert is_alive(leader)


def test_sigterm_ends_well_behaved_processes(family):
    result = end_processes([set(family)], grace=5.0)
    assert result == {"killed": set(), "left": set()}
    assert not any(is_alive(p) for p in family)


@pytest.mark.parametrize("family", ["ignore"], indirect=True)
def test_processes_that_ignore_sigterm_are_killed(family):
    began = time.monotonic()
    result = end_processes([set(family)], grace=0.5)
    assert result["killed"] == set(family) and result["left"] == set()
    assert not any(is_alive(p) for p in family)
    assert time.monotonic() - began < 5
