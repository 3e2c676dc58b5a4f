"""Where an elastic job may run: the hosts a discovery script prints, or a fixed list.

A host discovery script (Horovod's convention) prints the hosts available now,
one ``host:slots`` a line; a bare ``host`` gets ``--slots-per-host`` slots.
Blank lines and ``#`` comments are skipped. flockrun runs it every few seconds
(elastic_driver.py); everything the script may get wrong — a non-zero exit, a
hang, a line that is not a host — is a DiscoveryError naming the script and
the line, so the user sees why the job does not start or does not change.
"""

import os
import re
import subprocess
from typing import Dict, List, Optional, Sequence

from flockrun.errors import LaunchError
from flockrun.hosts import Host

# The names -H accepts (hosts.py), so that what discovery lists mpirun accepts too.
_HOST_RE = re.compile(r"^[A-Za-z0-9_.@-]+$")
_DIGITS = re.compile(r"^[0-9]+$")  # not str.isdigit(), which takes "²"
SCRIPT_TIMEOUT_S = 30.0


class DiscoveryError(LaunchError):
    """The discovery script failed or printed something that is not a host list."""


def parse_discovery_output(text: str, default_slots: int, source: str) -> List[Host]:
    """The hosts of a discovery script's output; a host named twice adds its slots.

    An empty list is valid (no host is available now); the caller decides what
    that means for the job.
    """
    slots: Dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        name, sep, count_text = entry.partition(":")
        count = int(count_text) if sep and _DIGITS.match(count_text) else None
        if not _HOST_RE.match(name) or (sep and (count is None or count < 1)):
            raise DiscoveryError(
                f"{source} printed {line.strip()!r} on line {number}: expected one "
                f"host or host:slots a line, slots a positive integer")
        slots[name] = slots.get(name, 0) + (count if sep else default_slots)
    return [Host(name, count) for name, count in slots.items()]


class ScriptDiscovery:
    """Runs the user's discovery script and parses what it prints."""

    def __init__(self, script: str, default_slots: int,
                 timeout_s: float = SCRIPT_TIMEOUT_S) -> None:
        self.script = script
        self.default_slots = default_slots
        self.timeout_s = timeout_s

    def describe(self) -> str:
        return f"host discovery script {self.script!r}"

    def find(self) -> List[Host]:
        """The hosts available now; DiscoveryError when the script fails."""
        source = self.describe()
        try:
            done = subprocess.run([self.script], capture_output=True, text=True,
                                  timeout=self.timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise DiscoveryError(f"{source} did not finish within "
                                 f"{self.timeout_s:g} s") from None
        except OSError as exc:
            raise DiscoveryError(f"cannot run {source}: {exc.strerror or exc} "
                                 f"(it must be an executable file)") from None
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
            raise DiscoveryError(f"{source} exited with status {done.returncode}: {said}")
        return parse_discovery_output(done.stdout, self.default_slots, source)


class FixedDiscovery:
    """The hosts of -H or --hostfile: an elastic job on them only recovers from failures."""

    def __init__(self, hosts: Sequence[Host], default_slots: int) -> None:
        self.hosts = [Host(h.name, h.slots if h.slots is not None else default_slots)
                      for h in hosts]

    def describe(self) -> str:
        return "the listed hosts"

    def find(self) -> List[Host]:
        return list(self.hosts)


def check_script(script: Optional[str]) -> None:
    """Refuse a discovery script that cannot run, before anything starts."""
    if script is None:
        return
    if not os.path.isfile(script):
        raise DiscoveryError(f"host discovery script {script!r} does not exist")
    if not os.access(script, os.X_OK):
        raise DiscoveryError(f"host discovery script {script!r} is not executable "
                             f"(chmod +x {script})")
