"""mpirun's own messages: what they say, and which the user needs to see.

When a rank fails, OpenMPI 4.1's mpirun prints *boxes* (text between two lines
of dashes) about it: "MPI_ABORT was invoked on rank R ... errorcode C", "The
first process to do so was: Process name: [[J,1],R] Exit code: C", "process
rank R with PID P on node H exited on signal S", "... due to process rank R
... on node H exiting improperly", plus notes such as "N more processes have
sent help message". flockrun reads them for its own one summary and hides
them; a box it does not know is shown as mpirun printed it (it may be the real
cause: a network warning, a daemon that could not start). ``--display-map``,
which flockrun adds to learn which host each rank runs on, is read the same
way and hidden.

``MpirunMessages`` is pure: one line of mpirun's text in, the lines to show
out, with the facts gathered on the way into an ``MpirunFacts``. mpirun
writes on two streams, each with its own boxes and map, so each stream gets a
parser of its own; both parsers fill one facts object.
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

_BOX_EDGE_RE = re.compile(r"^-{20,}$")

_ABORT_RE = re.compile(r"MPI_ABORT was invoked on rank (\d+) in communicator \S+ "
                       r"with errorcode (-?\d+)")
_FIRST_EXIT_RE = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\] Exit code: (-?\d+)")
_SIGNAL_RE = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on "
                        r"signal (\d+)")
_IMPROPER_RE = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exiting "
                          r"improperly")
_NOT_FOUND_RE = re.compile(r"unable to find the specified executable file.* "
                           r"Node: (\S+) Executable: (\S+)")
_NOT_EXECUTABLE_RE = re.compile(r"could not access or execute an executable: "
                                r"Executable: (\S+) Node: (\S+)")
_EXECVE_RE = re.compile(r"via the \"execve\" system call but failed.* Local host: (\S+) "
                        r".* Application name: (\S+) Error: (.+)$")
# "Some rank failed": usually followed by a box naming it, but not when the rank
# ended before mpirun had started every rank (then this is all mpirun says).
_SOME_RANK_FAILED_RE = re.compile(r"Primary job terminated normally, but")
# Boxes that only restate a failure reported by another box.
_RESTATING_RE = re.compile(r"unable to start the specified application as it "
                           r"encountered an error")
_NOTE_RES = (
    re.compile(r"^\[[^\]]*\] \d+ more process(es)? ha(s|ve) sent help message"),
    re.compile(r"^\[[^\]]*\] Set MCA parameter \"orte_base_help_aggregate\""),
    re.compile(r"^\d+ total process(es)? failed to start$"),
    # A race in OpenMPI 4.1 while an aborting rank's report is sent; the job
    # ends as reported anyway.
    re.compile(r"ORTE_ERROR_LOG: .* in file \S*show_help\.c at line \d+$"),
)

# --display-map prints "Data for JOB [...]" on one host, a "=== JOB MAP ===" header on several.
_MAP_START_RE = re.compile(r"^\s*(Data for JOB \[|=+\s+JOB MAP\s+=+\s*$)")
_MAP_END_RE = re.compile(r"^\s*=+\s*$")
_MAP_NODE_RE = re.compile(r"^\s*Data for node: (\S+)")
_MAP_RANK_RE = re.compile(r"Process OMPI jobid: \[\d+,\d+\] App: \d+ Process rank: (\d+)")


@dataclass(frozen=True)
class RankFailure:
    """How the first failed rank ended, as mpirun reported it.

    how: "exit" (non-zero status), "signal", "abort" (MPI_Abort with a code)
    or "improper" (exited without MPI_Finalize while the others ran on).
    """

    rank: int
    how: str
    code: Optional[int] = None
    signal: Optional[int] = None
    host: Optional[str] = None


@dataclass(frozen=True)
class LaunchFailure:
    """The program could not be started on a host."""

    executable: str
    host: Optional[str]
    reason: str
    not_found: bool


@dataclass
class MpirunFacts:
    """What mpirun's messages said, on either stream."""

    hosts: Dict[int, str] = field(default_factory=dict)  # rank -> host, from the job map
    launch_failure: Optional[LaunchFailure] = None
    some_rank_failed: bool = False  # mpirun said so, maybe without naming it
    failures: List[RankFailure] = field(default_factory=list)  # as reported, in order

    @property
    def failure(self) -> Optional[RankFailure]:
        """The failure to report: mpirun's "first process" verdicts win over aborts."""
        for failure in self.failures:
            if failure.how != "abort":
                return failure
        return self.failures[0] if self.failures else None


class MpirunMessages:
    """Reads mpirun's own lines from one stream into ``facts``; ``verbose`` shows
    every one of them, ``show_map`` the job map (when the user asked mpirun for it)."""

    def __init__(self, verbose: bool = False, show_map: bool = False,
                 facts: Optional[MpirunFacts] = None) -> None:
        self.verbose = verbose
        self.show_map = show_map
        self.facts = MpirunFacts() if facts is None else facts
        self._box: Optional[List[str]] = None
        self._in_map = False
        self._map_node: Optional[str] = None

    def add_line(self, line: str) -> List[str]:
        """Takes one line (without its line end); returns the lines to show now."""
        if self._box is not None:
            self._box.append(line)
            if not _BOX_EDGE_RE.match(line):
                return []
            box, self._box = self._box, None
            known = self._read_box(" ".join(" ".join(box[1:-1]).split()))
            return box if self.verbose or not known else []
        if _BOX_EDGE_RE.match(line):
            self._box = [line]
            return []
        if self._in_map or _MAP_START_RE.match(line):
            self._read_map_line(line)
            return [line] if self.verbose or self.show_map else []
        known = any(note.search(line) for note in _NOTE_RES)
        return [line] if self.verbose or not known else []

    def finish(self) -> List[str]:
        """Lines of a box mpirun never closed (shown: flockrun cannot tell what it is)."""
        box, self._box = self._box or [], None
        return box

    def _read_map_line(self, line: str) -> None:
        self._in_map = not _MAP_END_RE.match(line) or "JOB MAP" in line
        node = _MAP_NODE_RE.match(line)
        if node:
            self._map_node = node.group(1)
        rank = _MAP_RANK_RE.search(line)
        if rank and self._map_node is not None:
            self.facts.hosts[int(rank.group(1))] = self._map_node

    def _read_box(self, text: str) -> bool:
        """Records what a box says; False when flockrun does not know the box."""
        failure = _failure_in(text)
        if failure is not None:
            self.facts.failures.append(failure)
            return True
        launch = _launch_failure_in(text)
        if launch is not None:
            self.facts.launch_failure = self.facts.launch_failure or launch
            return True
        if _SOME_RANK_FAILED_RE.search(text):
            self.facts.some_rank_failed = True
            return True
        return bool(_RESTATING_RE.search(text))


def _failure_in(text: str) -> Optional[RankFailure]:
    """The rank failure a box reports, if it reports one."""
    match = _FIRST_EXIT_RE.search(text)
    if match:
        return RankFailure(int(match.group(1)), "exit", code=int(match.group(2)))
    match = _SIGNAL_RE.search(text)
    if match:
        return RankFailure(int(match.group(1)), "signal", signal=int(match.group(3)),
                           host=match.group(2))
    match = _IMPROPER_RE.search(text)
    if match:
        return RankFailure(int(match.group(1)), "improper", host=match.group(2))
    match = _ABORT_RE.search(text)
    if match:
        return RankFailure(int(match.group(1)), "abort", code=int(match.group(2)))
    return None


def _launch_failure_in(text: str) -> Optional[LaunchFailure]:
    """The program-start failure a box reports, if it reports one."""
    match = _NOT_FOUND_RE.search(text)
    if match:
        return LaunchFailure(match.group(2), match.group(1), "not found", True)
    match = _NOT_EXECUTABLE_RE.search(text)
    if match:
        return LaunchFailure(match.group(1), match.group(2),
                             "not an executable file, or not allowed to run it", False)
    match = _EXECVE_RE.search(text)
    if match:
        return LaunchFailure(match.group(2), match.group(1), match.group(3).strip(), False)
    return None
