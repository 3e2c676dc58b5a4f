"""Stopping an interactive cluster, and telling what of it still runs.

``stop`` first asks the engines to shut down through the controller (they
finish MPI together, so mpirun exits by itself), then ends whatever is left
from the record: mpirun's session (mpirun, the engines; on other hosts
mpirun ends its daemons and their ranks), the engines' "nanny" helpers
(ipyparallel starts each in a session of its own), then the controller's
session (the controller and its scheduler processes) — SIGTERM, a grace
period, SIGKILL. It needs no live controller or mpirun, so it also cleans up
after a crash, and it runs again harmlessly.
"""

import os
import time
from typing import Callable, Dict, Optional, Set

from flockrun.interactive_state import ClusterRecord, Profile
from flockrun.processes import (ProcessId, all_processes, children_outside, end_processes,
                                is_alive, session_members, wait_gone)

GRACE_SECONDS = 5.0  # for each SIGTERM stage
SHUTDOWN_SECONDS = 10.0  # for the engines to exit when asked to

Output = Callable[[str], None]


class ClusterError(Exception):
    """A start or stop that failed; the message says why (exit status 1)."""


def import_ipyparallel():
    """ipyparallel, or a ClusterError saying how to install it."""
    try:
        import ipyparallel
    except ImportError:
        raise ClusterError("flock-interactive needs ipyparallel (Debian: apt install "
                           "python3-ipyparallel; or pip install ipyparallel)") from None
    return ipyparallel


def log_tail(path: str, lines: int = 15) -> str:
    """The last lines of a log file, introduced by its path, for error messages."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            tail = handle.read().splitlines()[-lines:]
    except OSError:
        return f"(no log at {path})"
    return f"last lines of {path}:\n" + "\n".join("  " + line for line in tail)


def cluster_processes(record: ClusterRecord) -> Dict[str, Set[ProcessId]]:
    """The live local processes of the cluster, by part: engines (mpirun's
    session and the nannies) and controller (its session)."""
    processes = all_processes()
    engines: Set[ProcessId] = set()
    if record.mpirun is not None:
        engines = session_members(record.mpirun, processes)
        engines |= children_outside(engines, processes)
    for engine in record.engines:
        engines |= {n for n in engine.nannies if is_alive(n)}
    controller: Set[ProcessId] = set()
    if record.controller is not None:
        controller = session_members(record.controller, processes)
    return {"engines": engines, "controller": controller}


def live_processes(record: ClusterRecord) -> Set[ProcessId]:
    parts = cluster_processes(record)
    return parts["engines"] | parts["controller"]


def end_cluster(record: ClusterRecord, profile: Profile, *, graceful: bool,
                out: Output) -> Set[ProcessId]:
    """End every local process of the cluster; return those that survived SIGKILL."""
    if graceful and record.ready and record.controller is not None \
            and is_alive(record.controller):
        _shut_down_engines(record, profile, out)
    killed: Set[ProcessId] = set()
    if record.mpirun is not None and is_alive(record.mpirun):
        # mpirun first: on SIGTERM it ends its ranks, on other hosts too.
        killed |= end_processes([{record.mpirun}], GRACE_SECONDS)["killed"]
    parts = cluster_processes(record)
    result = end_processes([parts["engines"], parts["controller"]], GRACE_SECONDS)
    killed |= result["killed"]
    if killed:
        out(f"killed {len(killed)} process(es) that ignored SIGTERM: "
            + " ".join(str(p.pid) for p in sorted(killed)))
    return result["left"]


def _shut_down_engines(record: ClusterRecord, profile: Profile, out: Output) -> None:
    """Ask every engine to exit, and wait (bounded) for the engine side to end.

    Best effort: a busy or hung engine does not answer, and is then ended by
    signal like the rest.
    """
    try:
        import ipyparallel
        client = ipyparallel.Client(profile.connection_files[0], timeout=GRACE_SECONDS)
    except Exception as exc:  # an unreachable controller, a missing file, ...
        out(f"could not reach the controller ({type(exc).__name__}: {exc}); ending the "
            "engines by signal")
        return
    try:
        client.shutdown(targets="all", hub=False, block=False)
        # The client stays open meanwhile: closing it could drop the requests unsent.
        wait_gone(cluster_processes(record)["engines"], SHUTDOWN_SECONDS)
    except Exception as exc:
        out(f"could not ask the engines to shut down ({type(exc).__name__}: {exc})")
    finally:
        client.close()


def stop(profile_name: str, environ, out: Output) -> None:
    """Stop the cluster of a profile; raise ClusterError if a process survives."""
    profile = Profile(profile_name, environ)
    with profile.lock():
        record = profile.load_record()
        if record is None:
            if os.path.exists(profile.connection_files[0]):
                raise ClusterError(
                    f"flock-interactive started no cluster on profile '{profile.name}', but "
                    f"a controller's connection file is there ({profile.connection_files[0]}):"
                    f" stop that cluster with 'ipcluster stop --profile {profile.name}'")
            out(f"no cluster is running for profile '{profile.name}'")
            return
        began = time.monotonic()
        found = live_processes(record)
        left = end_cluster(record, profile, graceful=True, out=out)
        if left:
            raise ClusterError("could not end process(es) "
                               + " ".join(str(p.pid) for p in sorted(left))
                               + f"; the record stays at {profile.record_path}")
        profile.remove_files()
    out(f"stopped the cluster of profile '{profile.name}': {len(found)} local process(es) "
        f"ended in {time.monotonic() - began:.1f} s")


def status(profile_name: str, environ, out: Output) -> bool:
    """Print what of the profile's cluster runs; True when it is up and complete."""
    profile = Profile(profile_name, environ)
    record = profile.load_record()
    if record is None:
        out(f"no cluster is running for profile '{profile.name}'")
        return False
    parts = cluster_processes(record)
    controller_up = record.controller is not None and is_alive(record.controller)
    mpirun_up = record.mpirun is not None and is_alive(record.mpirun)
    engines_up = [e for e in record.engines if not e.local or is_alive(
        ProcessId(e.pid, e.start_time))]
    out(f"profile '{profile.name}' ({profile.dir}):")
    out(f"  controller: {_state(controller_up, record.controller)}")
    out(f"  mpirun:     {_state(mpirun_up, record.mpirun)}")
    hosts = sorted({e.host for e in record.engines})
    out(f"  engines:    {len(engines_up)} of {record.num_proc} running"
        + (f" on {', '.join(hosts)}" if hosts else "")
        + ("" if record.ready else " (start did not finish)"))
    up = record.ready and controller_up and mpirun_up and len(engines_up) == record.num_proc
    if not up and (parts["engines"] or parts["controller"]):
        out(f"  the cluster is broken; 'flock-interactive stop --profile {profile.name}' "
            "ends what is left")
    return up


def _state(up: bool, process: Optional[ProcessId]) -> str:
    if process is None:
        return "not started"
    return f"running (pid {process.pid})" if up else f"gone (was pid {process.pid})"

