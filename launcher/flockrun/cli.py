"""The ``flockrun`` command: parse arguments, build the mpirun argv, run it.

Everything that decides *what* to run lives in ``command`` (pure); this
module only gathers inputs (argv, environment, machine facts), reports
errors as ``flockrun: error: ...`` with exit status 2, and runs mpirun
without a shell, forwarding SIGINT/SIGTERM and returning its exit status.
"""

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from flockrun.command import LaunchOptions, build_mpirun_argv
from flockrun.errors import LaunchError
from flockrun.hosts import read_hostfile
from flockrun.machine import local_core_count, local_hostnames

# Options that take a value. The value is glued on as "--opt=value" before
# argparse sees it, so that a value starting with "-" (as in
# --mpi-args "--tag-output") is not mistaken for an option.
VALUE_OPTIONS = ("-np", "-n", "--num-proc", "-H", "--host", "--hostfile",
                 "-x", "--mpi-args", "--timeline-filename",
                 "--network-interface", "--rsh-agent")

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)

USAGE = """flockrun -np N [-H HOST[:SLOTS],... | --hostfile FILE]
                [-x VAR[=value]]... [--mpi-args ARGS]
                [--network-interface IFACES]... [--rsh-agent COMMAND]
                [--timeline-filename PATH] [--verbose] [--dry-run]
                command [args...]"""

EPILOG = """\
everything from the first non-option word on is the program and its own
arguments, passed untouched ("--" also ends flockrun's options).

examples:
  flockrun -np 4 python train.py --lr 0.1
  flockrun -np 8 -H node1:4,node2:4 python train.py
  flockrun -np 8 -H node1:4,node2:4 --network-interface eth1 python train.py
  flockrun -np 2 -x OMP_NUM_THREADS=1 --mpi-args "--tag-output" python x.py
  flockrun -np 2 --dry-run python train.py      # print the mpirun line only

every FLOCK_* variable and PATH, PYTHONPATH, LD_LIBRARY_PATH, VIRTUAL_ENV
(when set) are forwarded to the ranks. FLOCK_NETWORK_INTERFACE and
FLOCK_RSH_AGENT are the defaults of --network-interface and --rsh-agent.
See docs/running.md.
"""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors read "flockrun: error: ..." (exit 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n"
                     f"run '{self.prog} --help' for usage\n")


def make_parser() -> argparse.ArgumentParser:
    """The parser for flockrun's own options (not the program's)."""
    parser = _Parser(prog="flockrun", usage=USAGE, epilog=EPILOG,
                     allow_abbrev=False,
                     formatter_class=argparse.RawDescriptionHelpFormatter,
                     description="Run a flock program on N ranks with "
                                 "OpenMPI's mpirun.")
    add = parser.add_argument
    add("-np", "-n", "--num-proc", dest="num_proc", type=int, metavar="N",
        help="number of ranks to start (required)")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("-H", "--host", dest="host_spec",
                       metavar="HOSTS",
                       help="comma-separated HOST[:SLOTS] list (1 slot if "
                       "omitted)")
    hosts.add_argument("--hostfile", metavar="FILE",
                       help="file of 'host [slots=N]' lines")
    add("-x", dest="env_vars", action="append", default=[],
        metavar="VAR[=value]", help="export VAR (from here, or set to "
        "value) to every rank; repeatable")
    add("--mpi-args", dest="mpi_args", action="append", default=[],
        metavar="ARGS", help="extra mpirun arguments, split like a shell "
        "would; repeatable")
    add("--network-interface", dest="network_interfaces", action="append",
        default=[], metavar="IFACES", help="network for MPI traffic: "
        "comma-separated interface names or subnets (eth1, 10.0.0.0/24); "
        "repeatable; default $FLOCK_NETWORK_INTERFACE")
    add("--rsh-agent", metavar="COMMAND", help="command that starts mpirun's "
        "daemons on other hosts instead of ssh (called as COMMAND HOST "
        "...); default $FLOCK_RSH_AGENT")
    add("--timeline-filename", metavar="PATH",
        help="record a timeline: sets FLOCK_TIMELINE to PATH made absolute")
    add("--verbose", action="store_true",
        help="print the mpirun command line to stderr before running it")
    add("--dry-run", action="store_true",
        help="print the mpirun command line to stdout and exit")
    add("--help-env", action="store_true",
        help="list every FLOCK_* setting with its default and exit")
    return parser


def print_settings() -> int:
    """Print flock's settings table (from the installed flock, if any)."""
    try:
        from flock._core import settings  # the one table, csrc/common/config.cc
    except ImportError:
        print("flockrun: flock is not installed in this Python; see docs/env.md",
              file=sys.stderr)
        return 1
    for name, kind, default, doc in settings():
        print(f"{name:<24} {kind:<6} default {default or '(none)':<10} {doc}")
    return 0


def split_command(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """Split argv into (flockrun's options, the program and its args).

    The program starts at the first word that is neither an option nor an
    option's value, or right after "--". Option values are glued on
    ("-x=FOO") so argparse takes them verbatim.
    """
    front: List[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return front, list(argv[i + 1:])
        if token in VALUE_OPTIONS and i + 1 < len(argv):
            front.append(f"{token}={argv[i + 1]}")
            i += 2
        elif token.startswith("-") and token != "-":
            front.append(token)  # a flag, "--opt=value", or an error
            i += 1
        else:
            return front, list(argv[i:])
    return front, []


def options_from_args(args: argparse.Namespace,
                      command: Sequence[str]) -> LaunchOptions:
    """LaunchOptions from parsed arguments; reads the hostfile if any.

    Options left out stay "not given": the FLOCK_* defaults are applied by
    build_mpirun_argv from the environment it is handed.
    """
    hostfile_hosts = None
    if args.hostfile is not None:
        hostfile_hosts = tuple(read_hostfile(args.hostfile))
    return LaunchOptions(
        num_proc=args.num_proc, command=tuple(command),
        host_spec=args.host_spec, hostfile=args.hostfile,
        hostfile_hosts=hostfile_hosts, env_vars=tuple(args.env_vars),
        mpi_args=tuple(args.mpi_args),
        timeline_filename=args.timeline_filename,
        network_interfaces=tuple(args.network_interfaces),
        rsh_agent=args.rsh_agent)


def run_mpirun(argv: List[str], environ: Mapping[str, str]) -> int:
    """Run argv (no shell), forward SIGINT/SIGTERM, return its exit status.

    A status of "killed by signal S" becomes 128 + S, as a shell reports it.
    """
    child: List[subprocess.Popen] = []
    pending: List[int] = []

    def forward(signum, _frame):
        # A signal that lands before the child exists is sent once it does.
        if child:
            child[0].send_signal(signum)
        else:
            pending.append(signum)

    previous = _install_handlers(forward)
    try:
        try:
            proc = subprocess.Popen(argv, env=dict(environ))
        except OSError as exc:
            raise LaunchError(f"cannot start {argv[0]}: {exc}") from None
        child.append(proc)
        for signum in pending:
            proc.send_signal(signum)
        returncode = proc.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return returncode if returncode >= 0 else 128 - returncode


def _install_handlers(handler: Callable) -> dict:
    """Install handler for FORWARDED_SIGNALS; return the previous ones."""
    previous = {}
    for signum in FORWARDED_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread: leave signals alone
            break
    return previous


def main(argv: Optional[Sequence[str]] = None,
         environ: Optional[Mapping[str, str]] = None,
         which: Callable[..., Optional[str]] = shutil.which) -> int:
    """Entry point of the ``flockrun`` script; returns the exit status.

    environ and which are injectable for tests (the environment forwarded
    to the ranks and searched for mpirun; the PATH lookup).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    environ = dict(os.environ) if environ is None else dict(environ)
    front, command = split_command(argv)
    args = make_parser().parse_args(front)  # exits 2 on a usage error
    if args.help_env:
        return print_settings()
    try:
        options = options_from_args(args, command)
        mpirun = which("mpirun", path=environ.get("PATH", os.defpath))
        mpirun_argv = build_mpirun_argv(
            options, env=environ, cpu_count=local_core_count(),
            euid=os.geteuid(), mpirun=mpirun,
            local_hostnames=local_hostnames(), cwd=os.getcwd())
        line = shlex.join(mpirun_argv)
        if args.dry_run:
            print(line)
            return 0
        if args.verbose:
            print(line, file=sys.stderr, flush=True)
        return run_mpirun(mpirun_argv, environ)
    except LaunchError as exc:
        print(f"flockrun: error: {exc}", file=sys.stderr)
        return 2
