"""The ``flock-interactive`` command: an ipyparallel cluster whose engines are flock ranks.

    flock-interactive start -np 4        # controller + 4 engines under mpirun
    flock-interactive status
    flock-interactive stop

A notebook or IPython session then drives the ranks with ``%%px`` after
``ipyparallel.Client(profile="flock")``. Bluefog users know this as ``ibfrun``.
Exit status: 0 done, 1 the cluster could not be started or stopped (the
message says why), 2 a usage error, 130 interrupted (Ctrl-C), 143 stopped by
SIGTERM (a start ends what it had started either way). See docs/interactive.md.
"""

import argparse
import functools
import os
import shlex
import shutil
import signal
import sys
import time
from typing import Mapping, Optional, Sequence

from flockrun.errors import LaunchError
from flockrun.interactive_commands import StartRequest, build_commands, controller_ip
from flockrun.interactive_state import DEFAULT_PROFILE, Profile
from flockrun.interactive_teardown import ClusterError, status, stop
from flockrun.machine import local_core_count, local_hostnames
from flockrun.options import (LAUNCH_VALUE_OPTIONS, Parser, add_launch_arguments, glue_values,
                              launch_options)

PROG = "flock-interactive"

# flock-interactive's options that take a value (see options.glue_values).
VALUE_OPTIONS = LAUNCH_VALUE_OPTIONS + ("--controller-ip", "--timeout", "--profile")


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, command=PROG, description="Run an ipyparallel cluster whose "
                    "engines are the ranks of a flock job (Bluefog's ibfrun).",
                    epilog="see docs/interactive.md")
    commands = parser.add_subparsers(dest="action", required=True, metavar="ACTION",
                                     parser_class=functools.partial(Parser, command=PROG))
    begin = commands.add_parser("start", help="start a controller and N engines; returns "
                                "once every engine has registered")
    add_launch_arguments(begin, ranks="engines (ranks)", required=True)
    begin.add_argument("--controller-ip", metavar="ADDRESS", help="address the controller "
                       "listens on; default 127.0.0.1, or every interface (*) when a host "
                       "is another machine")
    begin.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="give up (and clean up) if the engines are not all registered "
                       "by then (default 60)")
    begin.add_argument("--verbose", action="store_true",
                       help="print both command lines to stderr before running them")
    begin.add_argument("--dry-run", action="store_true",
                       help="print both command lines and exit")
    for name, text in (("stop", "stop the cluster, leaving no process behind"),
                       ("status", "tell what of the cluster runs (exit 0 when it is up)")):
        commands.add_parser(name, help=text)
    for sub in commands.choices.values():
        sub.add_argument("--profile", default=DEFAULT_PROFILE,
                         help=f"IPython profile of the cluster (default {DEFAULT_PROFILE})")
    return parser


def request_from_args(args: argparse.Namespace) -> StartRequest:
    if args.num_proc < 1:
        raise LaunchError(f"-np must be at least 1, got {args.num_proc}")
    if args.timeout <= 0:
        raise LaunchError(f"--timeout must be positive, got {args.timeout}")
    return StartRequest(launch=launch_options(args), profile=args.profile,
                        controller_ip=args.controller_ip, timeout=args.timeout)


def run_start(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from flockrun.interactive_cluster import start  # keeps stop/status free of its imports
    request = request_from_args(args)
    names = local_hostnames()
    commands = build_commands(
        request, python=sys.executable, profile_dir=Profile(args.profile, environ).dir,
        ip=controller_ip(request, names), env=environ, cpu_count=local_core_count(),
        euid=os.geteuid(), mpirun=shutil.which("mpirun", path=environ.get("PATH", os.defpath)),
        local_hostnames=names, cwd=os.getcwd())
    if args.dry_run or args.verbose:
        stream = sys.stdout if args.dry_run else sys.stderr
        for argv in (commands.controller, commands.engines):
            print(shlex.join(argv), file=stream, flush=True)
        if args.dry_run:
            return 0
    began = time.monotonic()
    record = start(request, commands=commands, environ=environ, out=_say)
    hosts = sorted({e.host for e in record.engines})
    profile = Profile(args.profile, environ)
    _say(f"{record.num_proc} engines (ranks 0-{record.num_proc - 1}) on {', '.join(hosts)} "
         f"registered with the controller of profile '{profile.name}' in "
         f"{time.monotonic() - began:.1f} s")
    print(f"  connect: import ipyparallel as ipp; rc = ipp.Client(profile='{profile.name}')\n"
          f"           then %%px cells run on every rank (start with: import flock.torch as "
          f"bf; bf.init())\n"
          f"  stop:    {PROG} stop --profile {profile.name}\n"
          f"  logs:    {profile.log_path('controller')}\n"
          f"           {profile.log_path('engines')}", flush=True)
    return 0


def _say(text: str) -> None:
    print(f"{PROG}: {text}", flush=True)


def _exit_on_sigterm(signum, _frame):
    # SystemExit unwinds through start's clean-up, like Ctrl-C does.
    sys.exit(128 + signum)


def main(argv: Optional[Sequence[str]] = None,
         environ: Optional[Mapping[str, str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    environ = dict(os.environ) if environ is None else dict(environ)
    args = make_parser().parse_args(glue_values(argv, VALUE_OPTIONS))  # exits 2 if bad
    try:
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        if args.action == "start":
            return run_start(args, environ)
        if args.action == "stop":
            stop(args.profile, environ, _say)
            return 0
        return 0 if status(args.profile, environ, print) else 1
    except LaunchError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except ClusterError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        ended = "; everything it had started was ended" if args.action == "start" else ""
        print(f"{PROG}: interrupted{ended}", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
