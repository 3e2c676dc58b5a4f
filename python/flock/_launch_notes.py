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

    ``python -c CODE``, interactive sessions (no script) and Jupyter kernels get the
    template. Only the interpreter's own options count: ``python train.py -c cfg`` runs a
    script, whose ``-c`` is its own.
    """
    argv = list(orig_argv or [])
    if len(argv) < 2 or _python_runs(argv[1:]) is None or any("ipykernel" in a for a in argv):
        return "flockrun -np N python YOUR_SCRIPT.py"
    return "flockrun -np N " + shlex.join(argv)


def _python_runs(args):
    """What a Python interpreter runs given its arguments: "script", "module" (-m), or None
    (-c CODE, stdin, an interactive session). Options after the script are the script's.

    (launcher/flockrun/program.py reads them the same way; flock does not import flockrun.)
    """
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            return "script" if i < len(args) else None
        if arg in ("", "-"):
            return None  # stdin, or the empty sys.argv[0] of an interactive session
        if not arg.startswith("-"):
            return "script"
        if arg.startswith("--"):
            i += 1 if arg == "--check-hash-based-pycs" else 0
            continue
        for position, letter in enumerate(arg[1:], start=1):  # -u, -OO, -uc CODE, -Wignore
            if letter == "c":
                return None
            if letter == "m":
                return "module"
            if letter in "WX":
                i += 1 if position == len(arg) - 1 else 0  # its value is the next word
                break
    return None


def _command_line():
    """How this process was started: sys.orig_argv (Python 3.10+), else its nearest
    equivalent (the interpreter's own options are not known then)."""
    orig_argv = getattr(sys, "orig_argv", None)
    return list(orig_argv) if orig_argv else [sys.executable, *sys.argv]


def note_single_rank(size, environ=None, stream=None):
    """Says once per process that this is a one-rank run without a launcher."""
    global _single_rank_noted
    if _single_rank_noted or size != 1 or started_by_launcher(environ) or quiet(environ):
        return
    _single_rank_noted = True
    stream = sys.stderr if stream is None else stream
    command = suggested_command(_command_line())
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
