"""What a rank says about how it was started and how it ends.

Two one-line notes, kept here so that basics.py stays about starting and stopping:

- a program that calls ``init()`` without a launcher (``python train.py``) runs as one rank;
  it says so once on stderr with the flockrun command that would start N ranks, unless
  ``FLOCK_QUIET`` is set;
- a rank that mpirun terminates because another rank failed prints one fixed line instead of
  a traceback. flockrun recognizes that line (``TERMINATED_LINE_RE`` in
  launcher/flockrun/relay.py must match it) and leaves it out of its summary.
"""

import os
import shlex
import signal
import sys

# Set by mpirun (OpenMPI), or by PMIx/PMI launchers, in every rank's environment.
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE")

_single_rank_noted = False


def quiet(environ=None):
    """Is FLOCK_QUIET set to something other than "" or "0"? (As parsed at init() by the one
    settings table, csrc/common/config.cc; with ``environ`` given, read from it instead.)"""
    if environ is None:
        from flock._core_loader import core
        return core.quiet()
    return environ.get("FLOCK_QUIET", "") not in ("", "0")


def started_by_launcher(environ=None):
    environ = os.environ if environ is None else environ
    return any(name in environ for name in LAUNCHER_VARIABLES)


def suggested_command(orig_argv):
    """The flockrun command for this program, or a template when it cannot be repeated.

    ``python -c CODE`` and interactive sessions (no script) get the template.
    """
    argv = list(orig_argv or [])
    if len(argv) < 2 or "-c" in argv[1:] or any("ipykernel" in a for a in argv):
        return "flockrun -np N python YOUR_SCRIPT.py"
    return "flockrun -np N " + shlex.join(argv)


def note_single_rank(size, environ=None, stream=None):
    """Says once per process that this is a one-rank run without a launcher."""
    global _single_rank_noted
    if _single_rank_noted or size != 1 or started_by_launcher(environ) or quiet(environ):
        return
    _single_rank_noted = True
    stream = sys.stderr if stream is None else stream
    command = suggested_command(getattr(sys, "orig_argv", None))
    stream.write("flock: running as 1 rank (not started by flockrun or mpirun); to use N "
                 "ranks: {}  (FLOCK_QUIET=1 hides this note)\n".format(command))
    stream.flush()


def termination_line(rank, signum):
    """The one line a rank prints when the job's launcher terminates it."""
    return ("flock: rank {} ended by signal {} ({}): the job is being terminated, another rank "
            "failed or the job was interrupted\n".format(rank, signum, signal.Signals(signum).name))


def end_by_signal(rank, signum):
    """Prints termination_line and ends this process by signum, as if never caught.

    No MPI_Abort: the launcher is already ending the job, and an abort would only add its
    own report to the output.
    """
    sys.stderr.write(termination_line(rank, signum))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # only if the signal could not end the process
