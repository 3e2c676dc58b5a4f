"""flock-interactive start when things go wrong, without ipyparallel or MPI.

``start`` runs with stand-ins: the controller is a small Python process that
writes the two connection files and sleeps, the engines' "mpirun" just sleeps,
and ipyparallel is a fake whose client fails the way ipyparallel's does. Each
test checks the error start reports and that none of the processes it started
survives (every process carries a marker in its environment; any survivor is
killed at the end).
"""

import os
import signal
import subprocess
import sys
import types
import uuid

import pytest

from flockrun import interactive_cluster
from flockrun.command import LaunchOptions
from flockrun.interactive_cluster import start
from flockrun.interactive_commands import StartCommands, StartRequest
from flockrun.interactive_state import Profile
from flockrun.interactive_teardown import ClusterError

CONTROLLER = """
import json, os, sys, time
for path in sys.argv[1:]:
    with open(path + ".tmp", "w") as handle:
        json.dump({"key": "k"}, handle)
    os.replace(path + ".tmp", path)
time.sleep(60)
"""
ENGINES = "import time; time.sleep(60)"


def marked_processes(marker):
    """Pids of the live processes whose environment holds marker."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if marker.encode() in environ.read().split(b"\0"):
                    found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


@pytest.fixture
def setup(tmp_path):
    """(environ, commands); kills any process of the test that is left."""
    marker = f"FLOCK_TEST_MARKER={uuid.uuid4().hex}"
    environ = dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython"),
                   FLOCK_TEST_MARKER=marker.split("=", 1)[1])
    profile = Profile("flock", environ)
    commands = StartCommands(controller=[sys.executable, "-c", CONTROLLER,
                                         *profile.connection_files],
                             engines=[sys.executable, "-c", ENGINES])
    yield environ, commands
    left = marked_processes(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "start left processes behind"


def run_start(setup, ipp, monkeypatch, timeout=20.0):
    environ, commands = setup
    monkeypatch.setattr(interactive_cluster, "import_ipyparallel", lambda: ipp)
    request = StartRequest(LaunchOptions(num_proc=2, command=()), "flock", timeout=timeout)
    return start(request, commands=commands, environ=environ, out=lambda _text: None)


class RemoteError(Exception):
    """Stands in for ipyparallel.error.RemoteError (and its TimeoutError)."""


class FakeClient:
    """A client whose two engines are there at once; ``answer`` is what .get does."""

    def __init__(self, answer):
        self.ids = [0, 1]
        self._answer = answer

    def __getitem__(self, _targets):
        return self

    def apply_async(self, _function):
        return self

    def get(self, timeout):
        raise self._answer

    def close(self):
        pass


def fake_ipp(client):
    def connect(_path, timeout):
        if isinstance(client, Exception):
            raise client
        return client
    return types.SimpleNamespace(Client=connect)


def test_a_client_that_cannot_connect_is_a_cluster_error_with_the_controllers_log(
        setup, monkeypatch):
    ipp = fake_ipp(TimeoutError("Hub connection request timed out"))
    with pytest.raises(ClusterError) as error:
        run_start(setup, ipp, monkeypatch)
    message = str(error.value)
    assert message.startswith("cannot connect to the controller (TimeoutError: Hub "
                              "connection request timed out)\nlast lines of ")
    assert "flock-interactive-controller.log" in message.splitlines()[1]


@pytest.mark.parametrize("answer, words", [
    (RemoteError("SystemExit(no MPI rank)"), "RemoteError: SystemExit(no MPI rank)"),
    (TimeoutError("Result not ready."), "TimeoutError: Result not ready."),
])
def test_engines_that_fail_to_answer_are_a_cluster_error_with_the_engines_log(
        setup, monkeypatch, answer, words):
    with pytest.raises(ClusterError) as error:
        run_start(setup, fake_ipp(FakeClient(answer)), monkeypatch)
    message = str(error.value)
    assert message.startswith(f"the engines did not answer ({words})\nlast lines of ")
    assert "flock-interactive-engines.log" in message.splitlines()[1]


@pytest.fixture
def sigterm_exits():
    """SIGTERM raises SystemExit, as flock-interactive's main arranges."""
    def exit_143(_signum, _frame):
        sys.exit(143)
    previous = signal.signal(signal.SIGTERM, exit_143)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("interrupted", [1, 2], ids=["controller", "mpirun"])
def test_an_exit_right_after_a_spawn_ends_the_unrecorded_process(setup, monkeypatch,
                                                                  interrupted):
    calls = []
    real_identify = interactive_cluster.identify

    def identify(pid):
        calls.append(pid)
        if len(calls) == interrupted:
            raise SystemExit(143)  # SIGTERM between Popen and the record
        return real_identify(pid)

    monkeypatch.setattr(interactive_cluster, "identify", identify)
    with pytest.raises(SystemExit):
        run_start(setup, fake_ipp(TimeoutError("not reached")), monkeypatch)


def test_a_sigterm_during_a_spawn_waits_until_the_process_is_recorded(setup, monkeypatch,
                                                                      sigterm_exits):
    real_popen = subprocess.Popen

    def popen_then_sigterm(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)  # lands before Popen has returned the child
        return child

    monkeypatch.setattr(subprocess, "Popen", popen_then_sigterm)
    with pytest.raises(SystemExit):
        run_start(setup, fake_ipp(TimeoutError("not reached")), monkeypatch)
    assert signal.getsignal(signal.SIGTERM).__name__ == "exit_143"  # restored
