"""Facts about the machine flockrun runs on (the impure inputs of the builder).

Kept apart from ``command`` so the builder stays a pure function: the CLI
reads these facts once and passes them in; tests pass made-up values.
"""

import os
import socket
from typing import FrozenSet, Optional, Set, Tuple

_SYS_CPU = "/sys/devices/system/cpu"


def _core_of(cpu: int) -> Optional[Tuple[str, str]]:
    """(package id, core id) of a logical CPU, or None if sysfs lacks it."""
    base = f"{_SYS_CPU}/cpu{cpu}/topology"
    try:
        with open(f"{base}/physical_package_id", encoding="ascii") as pkg:
            package = pkg.read().strip()
        with open(f"{base}/core_id", encoding="ascii") as core:
            return package, core.read().strip()
    except OSError:
        return None


def local_core_count() -> int:
    """Physical cores this process may run on.

    OpenMPI gives a host without an explicit slot count one slot per
    *core*, not per hardware thread, so on a hyper-threaded machine
    os.cpu_count() would overstate what mpirun accepts without
    --oversubscribe. We count distinct (package, core) pairs among the CPUs
    in our affinity mask, and fall back to os.cpu_count() when sysfs or
    sched_getaffinity is unavailable. Erring low is safe: the worst case is
    an unneeded --oversubscribe.
    """
    try:
        cpus = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return os.cpu_count() or 1
    cores: Set[Tuple[str, str]] = set()
    for cpu in cpus:
        core = _core_of(cpu)
        if core is None:
            return len(cpus) or os.cpu_count() or 1
        cores.add(core)
    return len(cores) or os.cpu_count() or 1


def local_hostnames() -> FrozenSet[str]:
    """Names under which this machine may appear in a host list (lowercase).

    No DNS lookups (getfqdn can stall for seconds on a badly configured
    network); the loopback names and the kernel's hostname are enough to
    recognize the usual single-machine spellings.
    """
    hostname = socket.gethostname().lower()
    return frozenset({"localhost", "127.0.0.1", "::1", hostname,
                      hostname.split(".")[0]})
