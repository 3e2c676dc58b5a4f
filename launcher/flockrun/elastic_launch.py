"""One launch of an elastic job: mpirun on a chosen world, its output relayed.

``launch_world`` builds the mpirun command for the world (the user's options
with -np and -H replaced), runs it the way a plain flockrun job runs (run.py,
relay.py), prints flockrun's summary of a failed rank, and returns a
LaunchResult that says how the launch ended, for the supervisor to decide what
comes next (elastic_driver.py).
"""

import dataclasses
import os
import re
import shlex
import sys
from typing import Dict, Mapping, Optional

from flockrun.command import LaunchOptions, build_mpirun_argv, output_plan
from flockrun.discovery import FixedDiscovery, ScriptDiscovery, check_script
from flockrun.elastic_files import prepare_directory
from flockrun.elastic_options import ElasticSettings
from flockrun.elastic_driver import ElasticSupervisor
from flockrun.elastic_plan import LaunchResult, World
from flockrun.hosts import Host, parse_host_spec
from flockrun.machine import local_core_count, local_hostnames
from flockrun.relay import OutputRelay
from flockrun.report import closing_lines, exit_status
from flockrun.run import StreamWriter, Tick, run_relayed


def launch_world(options: LaunchOptions, world: World, environ: Mapping[str, str],
                 mpirun: Optional[str], verbose: bool, on_tick: Tick) -> LaunchResult:
    """Run options' program on world; on_tick(mpirun, now) runs while it does."""
    options = dataclasses.replace(options, num_proc=world.size, host_spec=world.host_spec(),
                                  hostfile=None, hostfile_hosts=None, relay_output=True)
    argv = build_mpirun_argv(options, env=environ, cpu_count=local_core_count(),
                             euid=os.geteuid(), mpirun=mpirun,
                             local_hostnames=local_hostnames(), cwd=os.getcwd())
    if verbose:
        print(shlex.join(argv), file=sys.stderr, flush=True)
    plan = output_plan(options, environ)
    writer = StreamWriter()
    relay = OutputRelay(writer, tag_output=plan.tag_lines, verbose=verbose,
                        show_map=plan.show_map)
    status, stopped_by = run_relayed(argv, environ, relay, writer.flush, on_tick)
    failure, facts = relay.failure, relay.facts
    host = None
    if failure is not None:
        host = failure.host or facts.hosts.get(failure.rank) or world.host_of_rank(failure.rank)
    last = relay.last_lines(failure.rank) if failure is not None else []
    for line in closing_lines(status, failure, facts.launch_failure, stopped_by, host,
                              world.size, last, facts.some_rank_failed):
        print(line, file=sys.stderr, flush=True)
    failed_rank = None
    if failure is not None:
        failed_rank = failure.rank
        if failure.how == "abort":  # flock ended the job: its error may name the cause
            failed_rank = blamed_rank(last, world.size, failure.rank)
    return LaunchResult(
        status=exit_status(status, failure, facts.launch_failure, stopped_by),
        failed_rank=failed_rank,
        failed_host=world.host_of_rank(failed_rank) if failed_rank is not None else None,
        cannot_start=facts.launch_failure is not None,
        stopped_by=stopped_by)


# flock's errors end with the host of the first rank they blame (flock/_rank_hosts.py).
_BLAMED = re.compile(r"\[rank (\d+) is on host \S+")


def blamed_rank(last_lines, size: int, reporter: int) -> int:
    """The rank a flock error in the reporter's last lines blames (a hung or lost rank
    its stall inspector named), else the reporter itself."""
    for line in reversed(list(last_lines)):
        found = _BLAMED.search(line)
        if found and int(found.group(1)) < size:
            return int(found.group(1))
    return reporter


STALL_SHUTDOWN_VARIABLE = "FLOCK_STALL_SHUTDOWN_S"
ELASTIC_STALL_SHUTDOWN_S = "30"  # a hung rank becomes an error this fast, unless chosen


def elastic_environment(environ: Mapping[str, str], options: LaunchOptions,
                        directory: str, launch_id: int) -> Dict[str, str]:
    """The ranks' environment for one launch (every FLOCK_* variable reaches them)."""
    env = dict(environ)
    env["FLOCK_ELASTIC_DIR"] = directory
    env["FLOCK_ELASTIC_LAUNCH"] = str(launch_id)
    chosen = STALL_SHUTDOWN_VARIABLE in environ or any(
        item.split("=", 1)[0] == STALL_SHUTDOWN_VARIABLE for item in options.env_vars)
    if not chosen:
        env[STALL_SHUTDOWN_VARIABLE] = ELASTIC_STALL_SHUTDOWN_S
    return env


def run_elastic(settings: ElasticSettings, options: LaunchOptions,
                environ: Mapping[str, str], mpirun: Optional[str], verbose: bool) -> int:
    """flockrun --elastic: supervise launches until the job is done or gives up."""
    prepare_directory(settings.directory)
    check_script(settings.discovery_script)
    if settings.discovery_script is not None:
        discovery = ScriptDiscovery(settings.discovery_script, settings.slots_per_host)
    else:
        listed = parse_host_spec(options.host_spec) if options.host_spec else \
            list(options.hostfile_hosts or [Host("localhost", settings.max_np)])
        discovery = FixedDiscovery(listed, settings.slots_per_host)

    def launch(world: World, launch_id: int, on_tick: Tick) -> LaunchResult:
        env = elastic_environment(environ, options, settings.directory, launch_id)
        return launch_world(options, world, env, mpirun, verbose, on_tick)

    return ElasticSupervisor(settings, discovery, launch).run()
