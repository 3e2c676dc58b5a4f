"""flockrun stops an mpirun that cannot end a failed job (run._AbortWatchdog).

After MPI_Abort, mpirun waits for every host's daemon; one it cannot reach (a host
lost for good) keeps it waiting forever ("abort is already in progress"). The fake
mpirun here prints a rank's ending line the way mpirun relays it, then behaves like
that mpirun: it ignores the first SIGTERM, and a second one "crashes" it (OpenMPI
4.1's forced stop can segfault in PMIx_Finalize). The grace periods are shortened.
The real case, a host's link taken down for good, is
tests/python/cluster/test_failure_across_hosts.py.
"""

import sys
import time

import pytest

from flockrun import run
from flockrun.relay import OutputRelay

# argv[1]: "stuck" (ignores the first SIGTERM, dies on the second), "deaf" (ignores
# every SIGTERM) or "ends" (exits by itself with status 3 after 0.3 s).
FAKE_MPIRUN = r"""
import os, signal, sys, time
mode = sys.argv[1]
terms = []
def on_term(signum, frame):
    terms.append(signum)
    if mode == "stuck" and len(terms) == 1:
        sys.stderr.write("mpirun: abort is already in progress...hit ctrl-c again\n")
    elif mode == "stuck":
        sys.stderr.write("[vm:1] *** Process received signal ***\n")
        sys.stderr.flush()
        os._exit(139)
signal.signal(signal.SIGTERM, on_term)
sys.stderr.write("[1,0]<stderr>:flock: rank 0 exits with status 3; ending every rank of the job\n")
sys.stderr.flush()
if mode == "ends":
    time.sleep(0.3)
    sys.exit(3)
while True:
    time.sleep(0.05)
"""


class Capture:
    def __init__(self):
        self.data = {"stdout": b"", "stderr": b""}

    def __call__(self, stream, data):
        self.data[stream] += data


@pytest.fixture
def short_grace(monkeypatch):
    monkeypatch.setattr(run, "ABORT_GRACE_S", 1.0)
    monkeypatch.setattr(run, "KILL_GRACE_S", 1.0)


def run_fake(mode):
    capture = Capture()
    start = time.monotonic()
    status, stopped_by = run.run_relayed([sys.executable, "-c", FAKE_MPIRUN, mode], {},
                                         OutputRelay(capture))
    return status, stopped_by, time.monotonic() - start, capture.data["stderr"].decode()


def test_an_mpirun_stuck_after_an_abort_is_stopped_with_the_ranks_status(short_grace, capsys):
    status, stopped_by, took, relayed = run_fake("stuck")
    assert (status, stopped_by) == (3, None)  # the aborting rank's code, not the crash's
    assert 1.0 <= took < 1.0 + run.DRAIN_AFTER_EXIT_S + 2.0
    assert "has not ended the job 1 s after rank 0 failed" in capsys.readouterr().err
    assert "Process received signal" not in relayed  # the forced stop's crash report


def test_an_mpirun_deaf_to_sigterm_is_killed(short_grace, capsys):
    status, _, took, _ = run_fake("deaf")
    assert status == 3
    assert 2.0 <= took < 2.0 + run.DRAIN_AFTER_EXIT_S + 2.0
    assert "stopping mpirun" in capsys.readouterr().err


def test_an_mpirun_that_ends_the_job_itself_is_left_alone(short_grace, capsys):
    status, _, took, _ = run_fake("ends")
    assert status == 3 and took < 1.0
    assert "stopping mpirun" not in capsys.readouterr().err
