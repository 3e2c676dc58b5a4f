"""Where an interactive cluster keeps its files, and its record of what runs.

Everything lives in the IPython profile directory, as ipyparallel expects:

    $IPYTHONDIR/profile_NAME/            ($IPYTHONDIR defaults to ~/.ipython)
        security/ipcontroller-client.json   written by ipcontroller; what
        security/ipcontroller-engine.json   ipyparallel.Client(profile=NAME) and
                                            the engines read
        pid/flock-interactive.json          the record below
        pid/flock-interactive.lock          held while a start or stop runs
        log/flock-interactive-*.log         the controller's and the engines' output

The record names every process ``start`` launched, by pid and start time
(see ``processes``), and is written after each launch, so ``stop`` can end
what a crashed ``start`` (or a crashed controller) left behind.
"""

import fcntl
import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import List, Mapping, Optional

from flockrun.errors import LaunchError
from flockrun.processes import ProcessId

DEFAULT_PROFILE = "flock"
CLIENT_FILE = "ipcontroller-client.json"
ENGINE_FILE = "ipcontroller-engine.json"

_PROFILE_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass
class EngineRecord:
    """One engine: its rank (= its ipyparallel engine id) and where it runs."""

    rank: int
    host: str
    pid: int
    start_time: int
    local: bool
    nannies: List[ProcessId] = field(default_factory=list)


@dataclass
class ClusterRecord:
    """What ``start`` launched for one profile (saved as JSON)."""

    profile: str
    num_proc: int
    controller: Optional[ProcessId] = None
    mpirun: Optional[ProcessId] = None
    engines: List[EngineRecord] = field(default_factory=list)
    ready: bool = False  # all engines registered and checked

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "ClusterRecord":
        data = json.loads(text)
        engines = [EngineRecord(**dict(e, nannies=[ProcessId(*n) for n in e["nannies"]]))
                   for e in data.pop("engines")]
        for name in ("controller", "mpirun"):
            if data[name] is not None:
                data[name] = ProcessId(*data[name])
        return cls(engines=engines, **data)


class Profile:
    """The paths of one IPython profile directory."""

    def __init__(self, name: str, environ: Mapping[str, str]):
        if not _PROFILE_RE.match(name):
            raise LaunchError(f"bad profile name {name!r}: use letters, digits, '_', '.', '-'")
        ipython_dir = environ.get("IPYTHONDIR") or os.path.join(
            environ.get("HOME") or os.path.expanduser("~"), ".ipython")
        self.name = name
        self.dir = os.path.abspath(os.path.join(ipython_dir, f"profile_{name}"))

    def path(self, *parts: str) -> str:
        return os.path.join(self.dir, *parts)

    @property
    def record_path(self) -> str:
        return self.path("pid", "flock-interactive.json")

    @property
    def connection_files(self) -> List[str]:
        return [self.path("security", CLIENT_FILE), self.path("security", ENGINE_FILE)]

    def log_path(self, what: str) -> str:
        return self.path("log", f"flock-interactive-{what}.log")

    def make_dirs(self) -> None:
        for sub in ("security", "pid", "log"):
            os.makedirs(self.path(sub), mode=0o700, exist_ok=True)

    def load_record(self) -> Optional[ClusterRecord]:
        """The saved record, or None when there is none (or it is unreadable)."""
        try:
            with open(self.record_path, encoding="utf-8") as handle:
                return ClusterRecord.from_json(handle.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a torn or foreign file: nothing we can act on

    def save_record(self, record: ClusterRecord) -> None:
        """Write the record atomically (a crash never leaves half a file)."""
        temporary = self.record_path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(record.to_json())
        os.replace(temporary, self.record_path)

    def remove_files(self) -> None:
        """Forget the cluster: the record and the controller's connection files."""
        for path in [self.record_path] + self.connection_files:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass

    def lock(self) -> "ProfileLock":
        return ProfileLock(self)


class ProfileLock:
    """An exclusive lock on the profile, so two starts (or a start and a
    stop) never run at once; released when its holder exits, even by a crash."""

    def __init__(self, profile: Profile):
        self._profile = profile
        self._handle = None

    def __enter__(self) -> "ProfileLock":
        self._profile.make_dirs()
        self._handle = open(self._profile.path("pid", "flock-interactive.lock"), "a")
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._handle.close()
            raise LaunchError(f"another flock-interactive start or stop is running for profile "
                              f"'{self._profile.name}'; wait for it to finish") from None
        return self

    def __exit__(self, *exc) -> None:
        self._handle.close()  # closing releases the lock
