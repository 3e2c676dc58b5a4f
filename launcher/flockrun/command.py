"""The pure builder: a launch request + machine facts -> the mpirun argv.

Nothing here reads the environment, the clock or the file system; every
fact (environment, cores, euid, mpirun path, local names, cwd) comes in as
an argument, so a test is one list comparison. The argv always has the
layout

    mpirun [--allow-run-as-root] -np N [host list] [placement]
           [network] [rsh agent] [--tag-output --display-map]
           [-x NAME | -x NAME=value]... [user --mpi-args]... command...

What flockrun adds, and why:
- ``--bind-to none`` unless the user binds: flock runs a communication
  thread beside the training thread; pinning a rank to one core makes
  the two fight over it.
- ``--oversubscribe --mca mpi_yield_when_idle 1`` on a single-machine run
  with more ranks than cores: mpirun refuses such runs otherwise, and
  ranks that busy-poll while sharing cores turn a tiny op into ~14 ms.
- ``--mca {oob,btl}_tcp_if_include`` for ``--network-interface``: hosts
  with several interfaces (docker0, a management network) otherwise make
  OpenMPI try each one, and a connection on an unroutable one hangs.
- ``--mca plm_rsh_agent`` for ``--rsh-agent``: sites (and emulated
  clusters) that start remote processes with something other than ssh.
- ``--tag-output --display-map`` when flockrun relays the output (the CLI
  does unless --mpi-args choose mpirun's output format): the tags say which
  rank wrote each piece, so lines are put back together whole; the map says
  which host each rank runs on, for the failure summary (relay.py).

Both come from flockrun's options or, when an option is not given, from
its environment (FLOCK_NETWORK_INTERFACE, FLOCK_RSH_AGENT), read from the
``env`` argument. An MCA parameter the user sets in --mpi-args wins.
"""

import ipaddress
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import AbstractSet, List, Mapping, Optional, Sequence, Tuple

from flockrun.errors import LaunchError
from flockrun.hosts import Host, all_local, parse_host_spec, total_slots

# Forwarded to the ranks when set, beside every FLOCK_* variable: they
# decide which python, which packages and which libraries the ranks see, and
# Bluefog's name for FLOCK_LOCAL_SIZE, which flock reads too.
FORWARDED_VARIABLES = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV",
                       "BLUEFOG_NODES_PER_MACHINE")

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Defaults of --network-interface and --rsh-agent (read by flockrun only;
# like every FLOCK_* variable they are forwarded to the ranks, harmlessly).
NETWORK_INTERFACE_VARIABLE = "FLOCK_NETWORK_INTERFACE"
RSH_AGENT_VARIABLE = "FLOCK_RSH_AGENT"

# Default of --tag-output (read by flockrun only, like the two above).
TAG_OUTPUT_VARIABLE = "FLOCK_TAG_OUTPUT"

# mpirun options that choose the output format themselves: with one of them
# in --mpi-args, mpirun's output goes to the terminal untouched.
_OUTPUT_FORMAT_OPTIONS = ("tag-output", "timestamp-output", "xml", "xml-file",
                          "output-filename", "xterm")

# mpirun options that set an MCA parameter: "--mca NAME VALUE".
_MCA_FLAGS = ("-mca", "--mca", "-gmca", "--gmca")

# For each parameter flockrun may set, the parameters (OpenMPI 4 synonyms
# included) whose presence in --mpi-args means the user already chose.
# OpenMPI refuses if_include together with if_exclude, hence both.
_USER_CHOICE = {
    "oob_tcp_if_include": ("oob_tcp_if_include", "oob_tcp_include",
                           "oob_tcp_if_exclude", "oob_tcp_exclude"),
    "btl_tcp_if_include": ("btl_tcp_if_include", "btl_tcp_if_exclude"),
    "plm_rsh_agent": ("plm_rsh_agent", "orte_rsh_agent", "pls_rsh_agent"),
}


@dataclass(frozen=True)
class LaunchOptions:
    """What the user asked for, as parsed from the command line.

    hostfile_hosts holds the parsed content of ``hostfile`` (the CLI reads
    the file, keeping this module free of I/O). Each mpi_args item is one
    ``--mpi-args`` string, split here with shell rules. Each
    network_interfaces item is one ``--network-interface`` value; the items
    are joined with commas. An empty network_interfaces or a None rsh_agent
    means "not given": build_mpirun_argv then takes the FLOCK_* default
    from its ``env`` argument, so the option always wins over the variable.
    """

    num_proc: Optional[int]
    command: Tuple[str, ...]
    host_spec: Optional[str] = None
    hostfile: Optional[str] = None
    hostfile_hosts: Optional[Tuple[Host, ...]] = None
    env_vars: Tuple[str, ...] = ()
    mpi_args: Tuple[str, ...] = ()
    timeline_filename: Optional[str] = None
    network_interfaces: Tuple[str, ...] = ()
    rsh_agent: Optional[str] = None
    relay_output: bool = False
    tag_output: Optional[bool] = None


@dataclass(frozen=True)
class OutputPlan:
    """How the ranks' output reaches the user.

    relay: flockrun reads it back from ``mpirun --tag-output`` (relay.py);
    False when the user's --mpi-args choose mpirun's output format.
    tag_lines: each line gets its rank as a prefix. show_map: the user asked
    for mpirun's --display-map, so the relay shows it.
    """

    relay: bool
    tag_lines: bool
    show_map: bool


def output_plan(options: LaunchOptions, env: Mapping[str, str]) -> OutputPlan:
    """Decide the output handling: --tag-output, else FLOCK_TAG_OUTPUT."""
    user_mpi_args = split_mpi_args(options.mpi_args)
    tag_lines = options.tag_output
    if tag_lines is None:
        tag_lines = _flag_variable(env, TAG_OUTPUT_VARIABLE)
    own_format = _has_option(user_mpi_args, *_OUTPUT_FORMAT_OPTIONS)
    if own_format and options.tag_output:
        raise LaunchError("--tag-output and an output option of mpirun in --mpi-args "
                          "both choose the output format; use one")
    return OutputPlan(relay=options.relay_output and not own_format,
                      tag_lines=bool(tag_lines) and not own_format,
                      show_map=_has_option(user_mpi_args, "display-map"))


def _flag_variable(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name)
    if value is None or value.lower() in ("0", "false", "no", "off"):
        return False
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    raise LaunchError(f"bad {name} {value!r}: expected 1 or 0")


def build_mpirun_argv(options: LaunchOptions, *, env: Mapping[str, str],
                      cpu_count: Optional[int], euid: int,
                      mpirun: Optional[str],
                      local_hostnames: AbstractSet[str],
                      cwd: str) -> List[str]:
    """Return the mpirun argv for ``options``; raise LaunchError if invalid.

    env is flockrun's environment (forwarded to the ranks, and the source
    of the FLOCK_NETWORK_INTERFACE and FLOCK_RSH_AGENT defaults), cpu_count
    the local core count, euid the effective user id, mpirun the resolved
    mpirun path (None when absent), local_hostnames the names of this
    machine, cwd the directory relative paths (the timeline file) are
    resolved against.
    """
    _check_request(options)
    user_mpi_args = split_mpi_args(options.mpi_args)
    hosts, host_args = _host_args(options)
    _check_slots(options.num_proc, hosts, host_args, user_mpi_args)
    exports = _exports(options, env, cwd)
    remote_args = (_network_args(options, env, user_mpi_args)
                   + _rsh_agent_args(options, env, user_mpi_args))
    if mpirun is None:
        raise LaunchError("mpirun not found on PATH; install OpenMPI "
                          "(Debian: apt install openmpi-bin) or add its "
                          "bin directory to PATH")
    argv = [mpirun]
    if euid == 0:
        argv.append("--allow-run-as-root")  # mpirun refuses root otherwise
    argv += ["-np", str(options.num_proc)] + host_args
    local = hosts is None or all_local(hosts, local_hostnames)
    argv += _placement_args(options.num_proc, local, cpu_count, user_mpi_args)
    argv += remote_args
    plan = output_plan(options, env)
    if plan.relay:  # tags let flockrun tell the ranks' output apart; the map, their hosts
        argv += ["--tag-output"] + ([] if plan.show_map else ["--display-map"])
    for item in exports:
        argv += ["-x", item]
    return argv + user_mpi_args + list(options.command)


def _check_request(options: LaunchOptions) -> None:
    """Reject a request without a rank count or a program."""
    if options.num_proc is None:
        raise LaunchError("-np N is required (the number of ranks to start)")
    if options.num_proc < 1:
        raise LaunchError(f"-np must be at least 1, got {options.num_proc}")
    if not options.command:
        raise LaunchError("missing command: give the program to run, e.g. "
                          "flockrun -np 2 python train.py")


def split_mpi_args(mpi_args: Sequence[str]) -> List[str]:
    """Shell-split every --mpi-args string, in order."""
    tokens: List[str] = []
    for text in mpi_args:
        try:
            tokens += shlex.split(text)
        except ValueError as exc:
            raise LaunchError(f"cannot split --mpi-args {text!r}: {exc}") \
                from None
    return tokens


def _host_args(options: LaunchOptions
               ) -> Tuple[Optional[List[Host]], List[str]]:
    """(hosts or None when none were listed, the mpirun arguments for them)."""
    if options.host_spec is not None and options.hostfile is not None:
        raise LaunchError("give -H or --hostfile, not both")
    if options.host_spec is not None:
        hosts = parse_host_spec(options.host_spec)
        spec = ",".join(f"{h.name}:{h.slots}" for h in hosts)
        return hosts, ["-H", spec]
    if options.hostfile is not None:
        if not options.hostfile_hosts:
            raise ValueError("hostfile_hosts must hold the parsed hostfile")
        return list(options.hostfile_hosts), ["--hostfile", options.hostfile]
    return None, []


def _check_slots(num_proc: int, hosts: Optional[List[Host]],
                 host_args: List[str], user_mpi_args: List[str]) -> None:
    """Fail early when a listed host set cannot hold the ranks.

    Skipped when slots are unknown (hostfile lines without slots=) or the
    user oversubscribes on purpose.
    """
    slots = None if hosts is None else total_slots(hosts)
    if slots is None or num_proc <= slots:
        return
    if _has_option(user_mpi_args, "oversubscribe"):
        return
    where = " ".join(host_args)
    raise LaunchError(
        f"-np {num_proc} asks for more ranks than the {slots} slot(s) of "
        f"{where}; lower -np, give hosts more slots (host:slots or "
        "slots=N), or pass --mpi-args=--oversubscribe")


def _has_option(tokens: Sequence[str], *names: str) -> bool:
    """Does an mpirun option (-name, --name or --name=value) appear?"""
    return any(t.startswith("-") and t.lstrip("-").split("=")[0] in names
               for t in tokens)


def _placement_args(num_proc: int, local: bool, cpu_count: Optional[int],
                    user_mpi_args: List[str]) -> List[str]:
    """Binding and oversubscription flags (see the module docstring)."""
    args: List[str] = []
    if not _has_option(user_mpi_args, "bind-to"):
        args += ["--bind-to", "none"]
    if not local or num_proc <= max(cpu_count or 1, 1):
        return args
    if not _has_option(user_mpi_args, "oversubscribe", "nooversubscribe"):
        args.append("--oversubscribe")
    if not any("mpi_yield_when_idle" in t for t in user_mpi_args):
        args += ["--mca", "mpi_yield_when_idle", "1"]
    return args


def _network_args(options: LaunchOptions, env: Mapping[str, str],
                  user_mpi_args: List[str]) -> List[str]:
    """--mca *_tcp_if_include for --network-interface or its variable.

    Both TCP users need it: oob (mpirun talking to its daemons) and btl
    (rank-to-rank messages); a layer the user configured is left alone.
    """
    given = ",".join(options.network_interfaces) \
        if options.network_interfaces else None
    value, source = _option_or_env(given, "--network-interface", env,
                                   NETWORK_INTERFACE_VARIABLE)
    if value is None:
        return []
    _check_network(value, source)
    return (_mca("oob_tcp_if_include", value, user_mpi_args)
            + _mca("btl_tcp_if_include", value, user_mpi_args))


def _rsh_agent_args(options: LaunchOptions, env: Mapping[str, str],
                    user_mpi_args: List[str]) -> List[str]:
    """--mca plm_rsh_agent for --rsh-agent or its variable.

    The value is passed as one word: OpenMPI itself splits it into the
    program and its arguments and appends the host and remote command.
    """
    value, source = _option_or_env(options.rsh_agent, "--rsh-agent", env,
                                   RSH_AGENT_VARIABLE)
    if value is None:
        return []
    if not value.strip():
        raise LaunchError(f"bad {source} {value!r}: give the command that "
                          "starts a program on another host, e.g. ssh")
    return _mca("plm_rsh_agent", value, user_mpi_args)


def _option_or_env(given: Optional[str], option: str, env: Mapping[str, str],
                   variable: str) -> Tuple[Optional[str], str]:
    """(value, its source for error messages): the option, else variable.

    A variable set to "" counts as set (and is then rejected), as flock
    does with its own settings: an empty value is more likely a mistake
    than a way to say "unset".
    """
    if given is not None:
        return given, option
    return env.get(variable), variable


def _check_network(value: str, source: str) -> None:
    """Reject what OpenMPI would warn about and then ignore, or hang on.

    OpenMPI reads an item starting with a letter as an interface name and
    anything else as ADDRESS/PREFIX; a "/" never occurs in a name.
    """
    for item in value.split(","):
        if not item or any(c.isspace() for c in item):
            raise LaunchError(
                f"bad {source} {value!r}: expected comma-separated interface "
                "names or subnets without spaces, e.g. eth0 or 10.0.0.0/24")
        is_name = item[0].isalpha() and "/" not in item
        if not is_name and not _is_subnet(item):
            raise LaunchError(
                f"bad {source} {value!r}: {item!r} is neither an interface "
                "name nor a subnet (write a subnet as ADDRESS/PREFIX, e.g. "
                "10.0.0.0/24)")


def _is_subnet(item: str) -> bool:
    """Is item ADDRESS/PREFIX? (A bare address is not: OpenMPI needs "/".)"""
    if "/" not in item:
        return False
    try:
        ipaddress.ip_network(item, strict=False)  # host bits may be set
    except ValueError:
        return False
    return True


def _mca(name: str, value: str, user_mpi_args: List[str]) -> List[str]:
    """["--mca", name, value], or nothing when the user already chose."""
    chosen = _USER_CHOICE[name]
    if any(flag in _MCA_FLAGS and param in chosen
           for flag, param in zip(user_mpi_args, user_mpi_args[1:])):
        return []
    return ["--mca", name, value]


def _exports(options: LaunchOptions, env: Mapping[str, str],
             cwd: str) -> List[str]:
    """The -x values: automatic forwards, then the timeline, then the user's.

    A variable the user sets explicitly is not also forwarded automatically,
    so each name reaches mpirun once.
    """
    user = list(options.env_vars)
    explicit = set()
    for item in user:
        name = item.split("=", 1)[0]
        if not _NAME_RE.match(name):
            raise LaunchError(f"bad -x {item!r}: expected VAR or VAR=value "
                              "with VAR a variable name")
        explicit.add(name)
    timeline = []
    if options.timeline_filename is not None:
        if "FLOCK_TIMELINE" in explicit:
            raise LaunchError("--timeline-filename and -x FLOCK_TIMELINE "
                              "both set the timeline; use one")
        path = _absolute(options.timeline_filename, env, cwd)
        timeline = [f"FLOCK_TIMELINE={path}"]
        explicit.add("FLOCK_TIMELINE")
    automatic = sorted(n for n in env if n.startswith("FLOCK_"))
    automatic += [n for n in FORWARDED_VARIABLES if n in env]
    return [n for n in automatic if n not in explicit] + timeline + user


def _absolute(path: str, env: Mapping[str, str], cwd: str) -> str:
    """Absolute form of path: ranks may start in another directory."""
    if not path:
        raise LaunchError("--timeline-filename needs a non-empty path")
    home = env.get("HOME")
    if home and (path == "~" or path.startswith("~/")):
        path = home + path[1:]  # "--timeline-filename=~/t" skips the shell
    return posixpath.normpath(posixpath.join(cwd, path))
