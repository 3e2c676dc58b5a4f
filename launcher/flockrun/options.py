"""The launch options that ``flockrun`` and ``flock-interactive start`` share.

Both start ranks under mpirun and take the same options for it: -np, -H or
--hostfile, -x, --mpi-args, --network-interface, --rsh-agent. They are
defined here once (``add_launch_arguments``), read into a LaunchOptions once
(``launch_options``), and their values glued on before argparse sees them
(``glue_values``), so that a value may start with "-" (``--mpi-args
"--bind-to core"``, ``-x OFFSET=-1``). ``Parser`` reports usage errors the way
both commands do: ``COMMAND: error: ...``, exit status 2.
"""

import argparse
from typing import List, Optional, Sequence

from flockrun.command import LaunchOptions
from flockrun.hosts import read_hostfile

# The launch options that take a value.
LAUNCH_VALUE_OPTIONS = ("-np", "-n", "--num-proc", "-H", "--host", "--hostfile", "-x",
                        "--mpi-args", "--network-interface", "--rsh-agent")


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors read "COMMAND: error: ..." (exit 2).

    command names the program in the message; it defaults to prog (a
    subcommand's parser gives its command's name, not "COMMAND ACTION").
    """

    def __init__(self, *args, command: Optional[str] = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command = command or self.prog

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.command}: error: {message}\n"
                     f"run '{self.command} --help' for usage\n")


def add_launch_arguments(parser: argparse.ArgumentParser, ranks: str = "ranks",
                         required: bool = False) -> None:
    """Add the launch options to parser; ranks words what -np counts in its help.

    required: argparse itself insists on -np (flockrun does not: --version needs none).
    """
    parser.add_argument("-np", "-n", "--num-proc", dest="num_proc", type=int, metavar="N",
                        required=required, help=f"number of {ranks} to start (required)")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("-H", "--host", dest="host_spec", metavar="HOSTS",
                       help="comma-separated HOST[:SLOTS] list (1 slot if omitted)")
    hosts.add_argument("--hostfile", metavar="FILE", help="file of 'host [slots=N]' lines")
    parser.add_argument("-x", dest="env_vars", action="append", default=[],
                        metavar="VAR[=value]", help="export VAR (from here, or set to "
                        "value) to every rank; repeatable")
    parser.add_argument("--mpi-args", dest="mpi_args", action="append", default=[],
                        metavar="ARGS", help="extra mpirun arguments, split like a shell "
                        "would; repeatable")
    parser.add_argument("--network-interface", dest="network_interfaces", action="append",
                        default=[], metavar="IFACES", help="network for MPI traffic: "
                        "comma-separated interface names or subnets (eth1, 10.0.0.0/24); "
                        "repeatable; default $FLOCK_NETWORK_INTERFACE")
    parser.add_argument("--rsh-agent", metavar="COMMAND", help="command that starts "
                        "mpirun's daemons on other hosts instead of ssh (called as COMMAND "
                        "HOST ...); default $FLOCK_RSH_AGENT")


def launch_options(args: argparse.Namespace, command: Sequence[str] = (),
                   **more) -> LaunchOptions:
    """LaunchOptions from the parsed launch options (the hostfile is read here) and
    ``more`` of LaunchOptions' fields."""
    hostfile_hosts = None if args.hostfile is None else tuple(read_hostfile(args.hostfile))
    return LaunchOptions(num_proc=args.num_proc, command=tuple(command),
                         host_spec=args.host_spec, hostfile=args.hostfile,
                         hostfile_hosts=hostfile_hosts, env_vars=tuple(args.env_vars),
                         mpi_args=tuple(args.mpi_args),
                         network_interfaces=tuple(args.network_interfaces),
                         rsh_agent=args.rsh_agent, **more)


def glue_values(argv: Sequence[str], value_options: Sequence[str]) -> List[str]:
    """["--mpi-args", "--x"] -> ["--mpi-args=--x"] for each of value_options, so that
    argparse takes a value starting with "-" as the value it is."""
    glued: List[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in value_options and i + 1 < len(argv):
            glued.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            glued.append(argv[i])
            i += 1
    return glued
