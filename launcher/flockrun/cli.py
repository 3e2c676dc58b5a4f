"""The ``flockrun`` command: parse arguments, build the mpirun argv, run it.

Everything that decides *what* to run lives in ``command`` (pure); this
module gathers inputs (argv, environment, machine facts), checks the program
and the hosts before mpirun starts (program.py, hostcheck.py), reports errors
as ``flockrun: error: ...`` (exit status 2, or 126/127 for the program), runs
mpirun (run.py) and says how the job ended (report.py).
"""

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from flockrun.command import (NETWORK_INTERFACE_VARIABLE, RSH_AGENT_VARIABLE,
                              TAG_OUTPUT_VARIABLE, LaunchOptions, OutputPlan,
                              build_mpirun_argv, output_plan, split_mpi_args)
from flockrun.elastic_launch import run_elastic
from flockrun.elastic_options import (ELASTIC_VALUE_OPTIONS, add_elastic_arguments,
                                      elastic_settings)
from flockrun.errors import LaunchError
from flockrun.hostcheck import check_hosts, remote_start
from flockrun.hosts import Host, parse_host_spec
from flockrun.machine import local_core_count, local_hostnames
from flockrun.options import (LAUNCH_VALUE_OPTIONS, Parser, add_launch_arguments, glue_values,
                              launch_options)
from flockrun.program import check_program, ranks_directory
from flockrun.relay import OutputRelay
from flockrun.report import closing_lines, exit_status
from flockrun.run import StreamWriter, run_passthrough, run_relayed

# flockrun's options that take a value (see options.glue_values).
VALUE_OPTIONS = LAUNCH_VALUE_OPTIONS + ("--timeline-filename",) + ELASTIC_VALUE_OPTIONS

USAGE = """flockrun -np N [-H HOST[:SLOTS],... | --hostfile FILE]
                [-x VAR[=value]]... [--mpi-args ARGS]
                [--network-interface IFACES]... [--rsh-agent COMMAND]
                [--tag-output] [--timeline-filename PATH] [--no-host-check]
                [--verbose] [--dry-run]
                [--elastic [--min-np A] [--max-np B] [--host-discovery-script S]
                 [--slots-per-host M] [--reset-limit K] [--elastic-dir D] ...]
                command [args...]
       flockrun --version | --help-env | --help"""

EPILOG = """\
everything from the first non-option word on is the program and its own
arguments, passed untouched ("--" also ends flockrun's options).

examples:
  flockrun -np 4 python train.py --lr 0.1
  flockrun -np 4 --tag-output python train.py   # lines start with [RANK]<stdout>:
  flockrun -np 8 -H node1:4,node2:4 python train.py
  flockrun -np 8 -H node1:4,node2:4 --network-interface eth1 python train.py
  flockrun -np 2 -x OMP_NUM_THREADS=1 --mpi-args "--report-bindings" python x.py
  flockrun -np 2 --dry-run python train.py      # print the mpirun line only
  flockrun --elastic -np 8 --min-np 4 --host-discovery-script ./hosts.sh python train.py

every FLOCK_* variable and PATH, PYTHONPATH, LD_LIBRARY_PATH, VIRTUAL_ENV,
BLUEFOG_NODES_PER_MACHINE (when set) are forwarded to the ranks. FLOCK_NETWORK_INTERFACE,
FLOCK_RSH_AGENT and FLOCK_TAG_OUTPUT are the defaults of --network-interface,
--rsh-agent and --tag-output. When a rank fails, flockrun prints one summary
(which rank, host, status, its last lines) instead of mpirun's reports;
--verbose shows those too. Exit status: 0 success, 2 flockrun refused to
start, 126/127 program not executable/not found, N a rank's status or
MPI_Abort code, 128+S a signal. See docs/running.md.
"""

# flockrun's own variables, for --help-env (flock's come from flock._core).
FLOCKRUN_SETTINGS = (
    (NETWORK_INTERFACE_VARIABLE, "default of --network-interface"),
    (RSH_AGENT_VARIABLE, "default of --rsh-agent"),
    (TAG_OUTPUT_VARIABLE, "default of --tag-output: 1 prefixes each line with its rank"),
)


def make_parser() -> argparse.ArgumentParser:
    """The parser for flockrun's own options (not the program's)."""
    parser = Parser(prog="flockrun", usage=USAGE, epilog=EPILOG, allow_abbrev=False,
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Run a flock program on N ranks with OpenMPI's mpirun.")
    add_launch_arguments(parser)
    add = parser.add_argument
    add("--tag-output", action="store_true", default=None,
        help="prefix each line with its rank, as [RANK]<stdout>: or "
        "[RANK]<stderr>:; default $FLOCK_TAG_OUTPUT")
    add("--timeline-filename", metavar="PATH",
        help="record a timeline: sets FLOCK_TIMELINE to PATH made absolute")
    add("--no-host-check", action="store_true",
        help="do not check that the listed remote hosts can be reached "
        "before starting mpirun")
    add("--verbose", action="store_true",
        help="print the mpirun command line to stderr before running it, "
        "and every message of mpirun's (not only flockrun's summary)")
    add("--dry-run", action="store_true",
        help="print the mpirun command line to stdout and exit")
    add("--help-env", action="store_true",
        help="list every FLOCK_* setting with its default and exit")
    add("--version", action="store_true",
        help="print the versions of flock and mpirun and exit")
    add_elastic_arguments(parser)
    return parser


def print_settings() -> int:
    """Print flock's settings table (from the installed flock, if any) and flockrun's."""
    status = 0
    try:
        from flock._core import settings  # the one table, csrc/common/config.cc
    except ImportError:
        print("flockrun: flock is not installed in this Python; see docs/env.md",
              file=sys.stderr)
        status = 1
    else:
        for name, kind, default, doc in settings():
            print(f"{name:<24} {kind:<6} default {default or '(none)':<10} {doc}")
        print()
    print("read by flockrun (forwarded to the ranks, which ignore them):")
    for name, doc in FLOCKRUN_SETTINGS:
        print(f"{name:<24} {doc}")
    return status


def print_version(mpirun: Optional[str]) -> int:
    """flock's version (this Python's), and mpirun's first --version line."""
    try:
        import flock
        print(f"flock {flock.__version__} ({os.path.dirname(flock.__file__)})")
    except ImportError as exc:
        print(f"flock: not importable in this Python ({sys.executable}): {exc}")
    if mpirun is None:
        print("mpirun: not found on PATH")
        return 0
    try:
        said = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        said = f"(mpirun --version failed: {exc})"
    first = said.strip().splitlines()[0] if said.strip() else "(no version printed)"
    print(f"{first} ({mpirun})")
    return 0


def split_command(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """Split argv into (flockrun's options, the program and its args).

    The program starts at the first word that is neither an option nor an
    option's value, or right after "--". Option values are glued on
    ("-x=FOO") so argparse takes them verbatim.
    """
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv):
            i += 2
        elif argv[i].startswith("-") and argv[i] != "-":
            i += 1  # a flag, "--opt=value", or an error
        else:
            break
    command = list(argv[i + 1:] if argv[i:i + 1] == ["--"] else argv[i:])
    return glue_values(argv[:i], VALUE_OPTIONS), command


def options_from_args(args: argparse.Namespace,
                      command: Sequence[str]) -> LaunchOptions:
    """LaunchOptions from parsed arguments; reads the hostfile if any.

    Options left out stay "not given": the FLOCK_* defaults are applied by
    build_mpirun_argv from the environment it is handed. The CLI always
    relays the output (unless the user's --mpi-args choose mpirun's format).
    """
    return launch_options(args, command, timeline_filename=args.timeline_filename,
                          relay_output=True, tag_output=args.tag_output)


def listed_hosts(options: LaunchOptions) -> Tuple[Optional[List[Host]], str]:
    """(the hosts of -H or --hostfile, or None; where they were listed)."""
    if options.host_spec is not None:
        return parse_host_spec(options.host_spec), "-H"
    if options.hostfile_hosts is not None:
        return list(options.hostfile_hosts), f"hostfile {options.hostfile}"
    return None, ""


def check_before_start(options: LaunchOptions, environ: Mapping[str, str],
                       which: Callable[..., Optional[str]],
                       check_remote_hosts: bool) -> None:
    """The program (when ranks run here) and the remote hosts, before mpirun."""
    hosts, source = listed_hosts(options)
    names = local_hostnames()
    if hosts is None or any(h.name.rpartition("@")[2].lower() in names for h in hosts):
        directory = ranks_directory(split_mpi_args(options.mpi_args), os.getcwd())
        check_program(options.command, environ.get("PATH", os.defpath), directory, which)
    if hosts is not None and check_remote_hosts:
        given_agent = options.rsh_agent if options.rsh_agent is not None \
            else environ.get(RSH_AGENT_VARIABLE)
        start = remote_start(given_agent, split_mpi_args(options.mpi_args), environ)
        for warning in check_hosts(hosts, source, start, names, can_prompt=has_terminal()):
            print(f"flockrun: warning: {warning}", file=sys.stderr, flush=True)


def has_terminal() -> bool:
    """Could mpirun's ssh ask the user something (a controlling terminal is there)?"""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR))
    except OSError:
        return False
    return True


def run_with_relay(argv: List[str], environ: Mapping[str, str], plan: OutputPlan,
                   verbose: bool, num_proc: int) -> int:
    """Run mpirun with its output relayed; print the closing summary; its status."""
    writer = StreamWriter()
    relay = OutputRelay(writer, tag_output=plan.tag_lines, verbose=verbose,
                        show_map=plan.show_map)
    status, stopped_by = run_relayed(argv, environ, relay, writer.flush)
    facts = relay.facts
    failure = relay.failure
    host = None
    if failure is not None:
        host = failure.host or facts.hosts.get(failure.rank)
    last = relay.last_lines(failure.rank) if failure is not None else []
    for line in closing_lines(status, failure, facts.launch_failure, stopped_by, host,
                              num_proc, last, facts.some_rank_failed):
        print(line, file=sys.stderr, flush=True)
    return exit_status(status, failure, facts.launch_failure, stopped_by)


def main(argv: Optional[Sequence[str]] = None,
         environ: Optional[Mapping[str, str]] = None,
         which: Callable[..., Optional[str]] = shutil.which) -> int:
    """Entry point of the ``flockrun`` script; returns the exit status.

    environ and which are injectable for tests (the environment forwarded
    to the ranks and searched for mpirun and the program; the PATH lookup).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    environ = dict(os.environ) if environ is None else dict(environ)
    front, command = split_command(argv)
    args = make_parser().parse_args(front)  # exits 2 on a usage error
    try:
        return _run(args, command, environ, which)
    except LaunchError as exc:
        print(f"flockrun: error: {exc}", file=sys.stderr)
        return getattr(exc, "status", 2)
    except KeyboardInterrupt:  # Ctrl-C while no mpirun runs (it gets the signal otherwise)
        print("flockrun: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT


def _run(args: argparse.Namespace, command: List[str], environ: Mapping[str, str],
         which: Callable[..., Optional[str]]) -> int:
    """What main does once the arguments are parsed."""
    if args.help_env:
        return print_settings()
    mpirun = which("mpirun", path=environ.get("PATH", os.defpath))
    if args.version:
        return print_version(mpirun)
    options = options_from_args(args, command)
    elastic = elastic_settings(args)
    if elastic is not None:
        if args.dry_run:
            raise LaunchError("--dry-run cannot show an elastic job: its hosts and size "
                              "change from launch to launch")
        check_before_start(options, environ, which, False)
        return run_elastic(elastic, options, environ, mpirun, args.verbose)
    mpirun_argv = build_mpirun_argv(
        options, env=environ, cpu_count=local_core_count(),
        euid=os.geteuid(), mpirun=mpirun,
        local_hostnames=local_hostnames(), cwd=os.getcwd())
    plan = output_plan(options, environ)
    line = shlex.join(mpirun_argv)
    if args.dry_run:
        print(line)
        return 0
    if args.verbose:
        print(line, file=sys.stderr, flush=True)
    check_before_start(options, environ, which, not args.no_host_check)
    if not plan.relay:
        return run_passthrough(mpirun_argv, environ)
    return run_with_relay(mpirun_argv, environ, plan, args.verbose, options.num_proc)
