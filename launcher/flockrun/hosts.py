"""Host lists: ``-H`` specs, hostfiles, slot counts and "is this run local?".

Vocabulary (OpenMPI's): a *host* is a machine name or address; a *slot* is
a place where mpirun may start one rank. The two ways to list hosts give
slots differently, and we follow OpenMPI exactly:

- ``-H a:4,b`` gives ``a`` 4 slots and ``b`` 1 slot (the default for -H);
- a hostfile line ``a slots=4`` gives 4; a line without ``slots=`` gives as
  many slots as ``a`` has cores, which we cannot know from here, so its
  slot count is *unknown* (None) and no slot check is made.

A host named twice adds its slots, as in OpenMPI.
"""

import re
from dataclasses import dataclass
from typing import Iterable, List, Optional

from flockrun.errors import LaunchError

# Host names, IPv4 addresses and OpenMPI's "user@host" form; deliberately
# strict so that a typo like "a;4" is reported here, not deep inside mpirun.
_HOST_RE = re.compile(r"^[A-Za-z0-9_.@-]+$")

# Hostfile keywords OpenMPI understands for a host line.
_HOSTFILE_KEYS = ("slots", "max_slots", "max-slots")


@dataclass(frozen=True)
class Host:
    """One host entry; slots is None when the entry leaves it to mpirun."""

    name: str
    slots: Optional[int]


def _positive_int(text: str) -> Optional[int]:
    """int(text) if text is a plain positive decimal integer, else None."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:  # isdigit() takes "²"
        return None
    return int(text)


def parse_host_spec(spec: str) -> List[Host]:
    """Parse a ``-H`` value such as ``a:4,b:2,c`` (missing slots mean 1)."""
    if not spec.strip():
        raise LaunchError("empty host list given to -H")
    hosts = []
    for entry in spec.split(","):
        name, sep, slots_text = entry.strip().partition(":")
        slots = _positive_int(slots_text) if sep else 1
        if not _HOST_RE.match(name) or slots is None:
            raise LaunchError(
                f"bad host entry {entry!r} in -H {spec!r}: "
                "expected host or host:slots with slots a positive integer")
        hosts.append(Host(name, slots))
    return hosts


def _parse_hostfile_line(fields: List[str], where: str) -> Host:
    """Turn the fields of one non-empty hostfile line into a Host."""
    name = fields[0]
    if not _HOST_RE.match(name):
        raise LaunchError(f"{where}: bad host name {name!r}")
    values = {}
    for field in fields[1:]:
        key, sep, value = field.partition("=")
        number = _positive_int(value)
        if not sep or key not in _HOSTFILE_KEYS or number is None:
            raise LaunchError(
                f"{where}: bad field {field!r}: expected slots=N or "
                "max_slots=N with N a positive integer")
        values[key.replace("-", "_")] = number
    slots, max_slots = values.get("slots"), values.get("max_slots")
    if slots is not None and max_slots is not None and max_slots < slots:
        raise LaunchError(f"{where}: max_slots={max_slots} is below "
                          f"slots={slots}")
    return Host(name, slots)


def parse_hostfile(text: str, source: str = "hostfile") -> List[Host]:
    """Parse hostfile text: ``host [slots=N] [max_slots=N]`` per line.

    ``#`` starts a comment; blank lines are skipped. ``source`` names the
    file in error messages.
    """
    hosts = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if fields:
            where = f"{source} line {number}"
            hosts.append(_parse_hostfile_line(fields, where))
    if not hosts:
        raise LaunchError(f"{source} lists no hosts")
    return hosts


def read_hostfile(path: str) -> List[Host]:
    """Read and parse a hostfile; an unreadable file is a LaunchError."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise LaunchError(f"cannot read hostfile {path!r}: {exc}") from None
    return parse_hostfile(text, f"hostfile {path!r}")


def total_slots(hosts: Iterable[Host]) -> Optional[int]:
    """Sum of the slots, or None if any host leaves its count to mpirun."""
    total = 0
    for host in hosts:
        if host.slots is None:
            return None
        total += host.slots
    return total


def all_local(hosts: Iterable[Host], local_hostnames: Iterable[str]) -> bool:
    """True when every host names this machine (localhost, its hostname...).

    OpenMPI's "user@" prefix does not change the machine, so it is ignored.
    """
    local = {name.lower() for name in local_hostnames}
    return all(h.name.rpartition("@")[2].lower() in local for h in hosts)
