"""Finding and ending the local processes of a detached job (Linux /proc).

Vocabulary: a process is named by a ``ProcessId`` — its pid *and* its start
time (clock ticks since boot, field 22 of /proc/PID/stat) — so a pid the
kernel has since handed to an unrelated process is never mistaken for ours.
A *session* is everything started by a process launched with
``start_new_session=True`` (its pid is the session id): mpirun and the ranks
it forks, or ipcontroller and its scheduler processes. A member keeps the
session id when its leader dies, and the kernel does not reuse a pid while
it still names a live session, so "the members of session S" stays
well-defined after a crash of the leader.
"""

import os
import signal
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, NamedTuple, Optional, Set


class ProcessId(NamedTuple):
    """A pid together with its start time, which tells reused pids apart."""

    pid: int
    start_time: int


@dataclass(frozen=True)
class ProcessInfo:
    """What /proc/PID/stat says about one live (non-zombie) process."""

    pid: int
    ppid: int
    session: int
    start_time: int

    @property
    def id(self) -> ProcessId:
        return ProcessId(self.pid, self.start_time)


def read_process(pid: int) -> Optional[ProcessInfo]:
    """The process's stat fields, or None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # The name (field 2) may hold spaces and ")": split after its last ")".
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # exited; its parent has not reaped it yet
        return None
    return ProcessInfo(pid=pid, ppid=int(fields[1]), session=int(fields[3]),
                       start_time=int(fields[19]))


def all_processes() -> List[ProcessInfo]:
    """Every live process on this machine."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = read_process(int(entry))
            if info is not None:
                found.append(info)
    return found


def identify(pid: int) -> Optional[ProcessId]:
    """The ProcessId of a live pid (None when it is gone)."""
    info = read_process(pid)
    return None if info is None else info.id


def is_alive(process: ProcessId) -> bool:
    """Is this very process (same pid, same start time) still running?"""
    return identify(process.pid) == process


def session_members(leader: ProcessId,
                    processes: Optional[List[ProcessInfo]] = None) -> Set[ProcessId]:
    """The live processes of the session ``leader`` started, leader included.

    When the leader's pid now belongs to another process (it died and the
    pid was reused), no member of its old session can be alive — the pid
    would not have been free — so the answer is empty.
    """
    current = identify(leader.pid)
    if current is not None and current != leader:
        return set()
    processes = all_processes() if processes is None else processes
    return {p.id for p in processes if p.session == leader.pid}


def children_outside(members: Set[ProcessId],
                     processes: Optional[List[ProcessInfo]] = None) -> Set[ProcessId]:
    """Direct children of ``members`` that left their session (setsid).

    ipengine starts its "nanny" helper that way, so killing the engines'
    session alone would miss it.
    """
    processes = all_processes() if processes is None else processes
    parents = {m.pid for m in members}
    sessions = {p.session for p in processes if p.id in members}
    return {p.id for p in processes if p.ppid in parents and p.session not in sessions}


def signal_all(targets: Iterable[ProcessId], signum: int) -> None:
    """Send signum to each target that is still the process we recorded."""
    for target in targets:
        if is_alive(target):
            try:
                os.kill(target.pid, signum)
            except ProcessLookupError:
                pass


def wait_gone(targets: Iterable[ProcessId], timeout: float) -> Set[ProcessId]:
    """Wait up to timeout seconds for targets to exit; return the survivors."""
    remaining = set(targets)
    deadline = time.monotonic() + timeout
    while True:
        remaining = {t for t in remaining if is_alive(t)}
        if not remaining or time.monotonic() >= deadline:
            return remaining
        time.sleep(0.05)


def end_processes(stages: List[Set[ProcessId]], grace: float) -> Dict[str, Set[ProcessId]]:
    """End each stage in turn: SIGTERM, wait up to grace; then SIGKILL what is left.

    Stages let mpirun go first (it tells its ranks to stop, on other hosts
    too) before the controller. Returns {"killed": needed SIGKILL,
    "left": survived even that}.
    """
    stubborn: Set[ProcessId] = set()
    for stage in stages:
        signal_all(stage, signal.SIGTERM)
        stubborn |= wait_gone(stage, grace)
    signal_all(stubborn, signal.SIGKILL)
    return {"killed": stubborn, "left": wait_gone(stubborn, 5.0)}
