"""The command lines of an interactive cluster (pure, like ``command``).

Two processes are started, each in a session of its own:

    python -m ipyparallel.controller --profile-dir=DIR --ip=IP
    mpirun ... python -m flockrun.interactive_engine --profile=NAME ...

The mpirun line is flockrun's own (``build_mpirun_argv``), so an engine job
gets exactly what ``flockrun`` gives a program: --allow-run-as-root for root,
--bind-to none, oversubscription of a single machine, the network and rsh
settings and the environment forwarding; plus -x FLOCK_INTERACTIVE_CONNECTION
(the controller's engine connection file, set in mpirun's environment).
"""

from dataclasses import dataclass, replace
from typing import AbstractSet, List, Mapping, Optional

from flockrun.command import LaunchOptions, build_mpirun_argv
from flockrun.errors import LaunchError
from flockrun.hosts import all_local, parse_host_spec
from flockrun.interactive_engine import CONNECTION_VARIABLE

LOOPBACK = "127.0.0.1"
ALL_INTERFACES = "*"


@dataclass(frozen=True)
class StartRequest:
    """What ``flock-interactive start`` was asked for.

    launch.command is empty: the engine command is filled in here. An empty
    controller_ip means "choose": the loopback address when every rank runs
    on this machine, all interfaces otherwise.
    """

    launch: LaunchOptions
    profile: str
    controller_ip: Optional[str] = None
    timeout: float = 60.0


def runs_on_this_machine(launch: LaunchOptions, local_hostnames: AbstractSet[str]) -> bool:
    """Does every rank run here? (no host list, or only names of this machine)"""
    if launch.host_spec is not None:
        return all_local(parse_host_spec(launch.host_spec), local_hostnames)
    if launch.hostfile_hosts is not None:
        return all_local(launch.hostfile_hosts, local_hostnames)
    return True


def controller_ip(request: StartRequest, local_hostnames: AbstractSet[str]) -> str:
    """The address the controller listens on (and engines and clients dial)."""
    if request.controller_ip:
        return request.controller_ip
    local = runs_on_this_machine(request.launch, local_hostnames)
    return LOOPBACK if local else ALL_INTERFACES


def controller_argv(python: str, profile_dir: str, ip: str) -> List[str]:
    """ipcontroller, run by the same Python as the engines and the client."""
    return [python, "-m", "ipyparallel.controller", f"--profile-dir={profile_dir}",
            f"--ip={ip}"]


def engine_command(python: str, profile: str) -> List[str]:
    """What each rank runs. auto_create: remote hosts may lack the profile directory."""
    return [python, "-m", "flockrun.interactive_engine", f"--profile={profile}",
            "--IPEngine.auto_create=True"]


def engine_mpirun_argv(request: StartRequest, *, python: str, env: Mapping[str, str],
                       cpu_count: Optional[int], euid: int, mpirun: Optional[str],
                       local_hostnames: AbstractSet[str], cwd: str) -> List[str]:
    """The mpirun line for the engines: flockrun's builder on the engine command.

    The controller's connection details (CONNECTION_VARIABLE, set when
    mpirun starts) are always exported; IPYTHONDIR, when set, too, so remote
    engines read the same profile path (unless the user's own -x names it).
    """
    if request.launch.command:
        raise LaunchError("flock-interactive runs the engines itself; give no command")
    exports = tuple(request.launch.env_vars)
    named = {x.split("=", 1)[0] for x in exports}
    if "IPYTHONDIR" in env and "IPYTHONDIR" not in named:
        exports += ("IPYTHONDIR",)
    if CONNECTION_VARIABLE in named:
        raise LaunchError(f"{CONNECTION_VARIABLE} is set by flock-interactive; do not pass it")
    exports += (CONNECTION_VARIABLE,)
    launch = replace(request.launch, command=tuple(engine_command(python, request.profile)),
                     env_vars=exports)
    return build_mpirun_argv(launch, env=env, cpu_count=cpu_count, euid=euid, mpirun=mpirun,
                             local_hostnames=local_hostnames, cwd=cwd)


@dataclass(frozen=True)
class StartCommands:
    """The two command lines of a start."""

    controller: List[str]
    engines: List[str]


def build_commands(request: StartRequest, *, python: str, profile_dir: str, ip: str,
                   env: Mapping[str, str], cpu_count: Optional[int], euid: int,
                   mpirun: Optional[str], local_hostnames: AbstractSet[str],
                   cwd: str) -> StartCommands:
    """Both command lines; raises LaunchError (before anything starts) on a bad request."""
    return StartCommands(
        controller_argv(python, profile_dir, ip),
        engine_mpirun_argv(request, python=python, env=env, cpu_count=cpu_count, euid=euid,
                           mpirun=mpirun, local_hostnames=local_hostnames, cwd=cwd))
