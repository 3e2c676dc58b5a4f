"""Runs pytest on one rank of a flockrun job.

    flockrun -np 4 python tests/python/mpi_pytest.py OUT_DIR [pytest args...]

Rank 0 reports on the terminal and writes OUT_DIR/junit-np<N>.xml; the other
ranks write their report to OUT_DIR/rank<r>-np<N>.log, which is printed only
when that rank failed, so a failure on any rank is seen and fails the job.

A failed test on any rank ends the whole job at once (AbortOnFailure): the rank
prints the failure's report and one line naming the test and itself on stderr,
then calls MPI_Abort, instead of leaving the other ranks waiting for it in the
test's next collective. Every test also has a timeout (pytest-timeout): a hang
ends the rank with a stack dump, and mpirun then ends the job.
"""

import contextlib
import os
import sys

import pytest


class AbortOnFailure:
    """A pytest plugin: the first failure on this rank ends every rank of the job.

    A failure is a failed report of any phase (a fixture's set-up, the test, a
    fixture's tear-down, a strict xfail that passed) or of collecting a module.
    Skips, xfails and exceptions a test expects (pytest.raises) are not failures.
    In a one-rank job (or before flock started) nothing waits for this rank, and
    pytest goes on as usual.
    """

    def __init__(self):
        self._config = None

    def pytest_configure(self, config):
        self._config = config

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        # The rank is being terminated because another rank failed (FlockAbortedError
        # from flock's SIGTERM handler): its one line, no report, no second MPI_Abort.
        error = call.excinfo.value if call.excinfo is not None else None
        signum = getattr(error, "flock_termination_signal", None)
        core = _multi_rank_core()
        if signum is not None and core is not None:
            from flock import _launch_notes

            with self._uncaptured():
                _launch_notes.end_by_signal(core.rank(), signum)  # does not return
        yield

    @pytest.hookimpl(trylast=True)  # after the terminal reporter wrote its "F"
    def pytest_runtest_logreport(self, report):
        if report.failed:
            self._abort(report, "{} ({})".format(report.nodeid, report.when))

    @pytest.hookimpl(trylast=True)
    def pytest_collectreport(self, report):
        if report.failed:
            self._abort(report, "collecting {}".format(report.nodeid or "the tests"))

    def _uncaptured(self):
        """Writes to sys.stdout/stderr in its block reach the rank's own streams."""
        capture = self._config.pluginmanager.getplugin("capturemanager")
        return capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()

    def _abort(self, report, what):
        core = _multi_rank_core()
        if core is None:
            return
        rank = core.rank()
        with self._uncaptured():
            sys.stdout.flush()  # rank 0's terminal report; the other ranks' log file
            sys.stderr.write(failure_text(report, rank, what))
            sys.stderr.write("mpi_pytest: rank {} FAILED {}; MPI_Abort ends every rank of the "
                             "job\n".format(rank, what))
            sys.stderr.flush()
            core.abort(1)
        os._exit(1)  # abort does not return; should it, this rank still fails the job


def _multi_rank_core():
    """flock._core when flock runs in a job of several ranks, else None."""
    core = sys.modules.get("flock._core")  # never imported here: importing may be what failed
    return core if core is not None and core.is_initialized() and core.size() > 1 else None


def failure_text(report, rank, what):
    """The failure's report as pytest's summary shows it: traceback, then captured output."""
    parts = ["==== rank {}: {} ====\n".format(rank, what), report.longreprtext.rstrip("\n"), "\n"]
    for title, content in report.sections:
        parts += ["---- {} ----\n".format(title), content.rstrip("\n"), "\n"]
    return "".join(parts)


def main():
    out_dir, args = sys.argv[1], sys.argv[2:]
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    os.makedirs(out_dir, exist_ok=True)
    args = ["-p", "no:cacheprovider", "--timeout=120", "--color=no",
            "-o", "junit_suite_name=np{}".format(size)] + args
    plugins = [AbortOnFailure()]
    if rank == 0:
        junit = os.path.join(out_dir, "junit-np{}.xml".format(size))
        code = pytest.main(args + ["--junitxml", junit], plugins=plugins)
    else:
        log_path = os.path.join(out_dir, "rank{}-np{}.log".format(rank, size))
        with open(log_path, "w") as log, contextlib.redirect_stdout(log):
            code = pytest.main(args + ["-q"], plugins=plugins)
        if code != 0:
            with open(log_path) as log:
                sys.stderr.write("==== rank {} failed; its report follows ====\n{}".format(
                    rank, log.read()))
    sys.stdout.flush()
    sys.exit(int(code))


if __name__ == "__main__":
    main()
