"""What flockrun prints of mpirun's output, line by line.

mpirun runs with ``--tag-output``; ``OutputRelay`` reads its stdout and
stderr back (tagged_stream.py), and writes

- each rank's lines whole, to flockrun's stdout or stderr as the rank wrote
  them, prefixed with ``[RANK]<stdout>:`` / ``[RANK]<stderr>:`` when the user
  asked for ``--tag-output`` (horovodrun's form), bare otherwise. A line
  without its end yet is held until it ends; if it stays unfinished for
  ``PARTIAL_LINE_WAIT_S`` (a prompt, "epoch 1 ... " before a long step) it is
  written as it is, and whatever another rank writes next starts on a new line,
  so lines of different ranks never share a terminal line;
- mpirun's own lines that MpirunMessages does not hide (mpirun_messages.py);
  text of mpirun's left without its line end for ``PARTIAL_LINE_WAIT_S``, or
  at the end, counts as a line of its own and is filtered like the others.

It keeps what the failure summary needs: each rank's last lines, the ranks
that said they were terminated (flock's one line, hidden), mpirun's facts.
It is pure: bytes and a clock in, calls to ``write(stream, bytes)`` out.
"""

import collections
import re
from dataclasses import dataclass
from typing import Callable, Deque, Dict, List, Optional, Set, Tuple, Union

from flockrun.mpirun_messages import MpirunFacts, MpirunMessages, RankFailure
from flockrun.tagged_stream import LineJoiner, Owner, TagSplitter

PARTIAL_LINE_WAIT_S = 1.0
PARTIAL_LINE_LIMIT = 64 * 1024  # bytes; a longer unfinished line is written at once
TAIL_LINES = 10

# flock's line for a rank the launcher terminates (python/flock/_launch_notes.py).
TERMINATED_LINE_RE = re.compile(
    rb"^flock: rank (\d+) ended by signal \d+ \(SIG[A-Z0-9]+\): the job is being terminated")

# flock's lines for a rank that ends the job (python/flock/basics.py); they stand in
# for mpirun's MPI_Abort box, which OpenMPI sometimes loses in a race.
ENDING_JOB_RE = re.compile(rb"^flock: (?:uncaught exception on rank (\d+)|rank (\d+) exits "
                           rb"with status (-?\d+)); ending every rank of the job")
# The engine's own MPI_Abort (csrc/transport/mpi/mpi_transport.cc: MpiTransport::Abort).
ENGINE_ABORT_RE = re.compile(rb"^\[flock (\d+) transport ERROR\] aborting the job with exit "
                             rb"code (-?\d+)")

Writer = Callable[[str, bytes], None]


@dataclass(frozen=True)
class _MpirunText:
    """The LineJoiner key of mpirun's own text on one stream (a rank's is its Owner)."""

    stream: str


_Key = Union[Tuple[int, str], _MpirunText]


class OutputRelay:
    """Routes mpirun's two output streams to ``write``; see the module docstring."""

    def __init__(self, write: Writer, tag_output: bool = False,
                 verbose: bool = False, show_map: bool = False) -> None:
        self.facts = MpirunFacts()  # what mpirun's messages said, on either stream
        self._messages = {stream: MpirunMessages(verbose, show_map, self.facts)
                          for stream in ("stdout", "stderr")}
        self.tails: Dict[int, Deque[str]] = {}
        self.terminated: Set[int] = set()
        self._ending: List[RankFailure] = []  # what flock's own lines said
        self._write = write
        self._tag_output = tag_output
        self._verbose = verbose
        self._splitters = {"stdout": TagSplitter(), "stderr": TagSplitter()}
        self._joiner = LineJoiner()
        self._changed: Dict[_Key, float] = {}  # key -> when its partial text last grew
        self._last_feed = {"stdout": 0.0, "stderr": 0.0}
        self._carry: Dict[Tuple[int, str], bytes] = {}  # a line's part already written
        # Per output stream: (owner whose line is unfinished there, may it go on unprefixed).
        self._open: Dict[str, Tuple[object, bool]] = {}
        self._mpirun_muted = False

    def mute_mpirun(self) -> None:
        """Drops mpirun's own text from now on (flockrun stopped it: its crash
        report after a forced stop says nothing about the job)."""
        self._mpirun_muted = True

    def feed(self, stream: str, data: bytes, now: float) -> None:
        """Takes what mpirun wrote on its ``stream`` ("stdout" or "stderr")."""
        self._last_feed[stream] = now
        for owner, text in self._splitters[stream].feed(data):
            self._route(stream, owner, text, now)

    def tick(self, now: float) -> None:
        """Writes lines left unfinished for PARTIAL_LINE_WAIT_S or more (mpirun's as lines)."""
        for stream, splitter in self._splitters.items():
            if now - self._last_feed[stream] >= PARTIAL_LINE_WAIT_S:
                for owner, text in splitter.finish():  # not a tag start after all
                    self._route(stream, owner, text, self._last_feed[stream])
        for key in self._joiner.owners_with_partial():
            if now - self._changed.get(key, now) >= PARTIAL_LINE_WAIT_S:
                self._write_partial(key)

    def finish(self) -> None:
        """Writes everything still held, once both streams have ended."""
        for stream, splitter in self._splitters.items():
            for owner, text in splitter.finish():
                self._route(stream, owner, text, 0.0)
        for key in self._joiner.owners_with_partial():
            self._write_partial(key)
        for stream, messages in self._messages.items():
            for line in messages.finish():
                self._write_line(stream, line)
        for stream in ("stdout", "stderr"):
            for carried in [o for o in self._carry if o[1] == stream]:
                self._remember(carried, self._carry.pop(carried))
            if stream in self._open:
                self._write(stream, b"\n")
                del self._open[stream]

    @property
    def failure(self) -> Optional[RankFailure]:
        """The first failed rank: mpirun's report, else the first flock ending line."""
        return self.facts.failure or (self._ending[0] if self._ending else None)

    def last_lines(self, rank: int) -> List[str]:
        """The rank's last lines, oldest first (empty when it printed nothing)."""
        return list(self.tails.get(rank, ()))

    def _route(self, stream: str, owner: Owner, text: bytes, now: float) -> None:
        key: _Key = owner if owner is not None else _MpirunText(stream)
        segments = self._joiner.add(key, text)
        if self._joiner.partial(key):
            self._changed[key] = now
        if len(self._joiner.partial(key)) >= PARTIAL_LINE_LIMIT and owner is not None:
            segments.append(self._joiner.take_partial(key))
        for segment in segments:
            if owner is None:
                self._mpirun_line(stream, segment)
            else:
                self._rank_segment(owner, segment)

    def _write_partial(self, key: _Key) -> None:
        """Writes the unfinished text of key: a rank's as it is, mpirun's as one line."""
        text = self._joiner.take_partial(key)
        if isinstance(key, _MpirunText):
            self._mpirun_line(key.stream, text)
        else:
            self._rank_segment(key, text)

    def _rank_segment(self, owner: Tuple[int, str], segment: bytes) -> None:
        rank, stream = owner
        line = self._carry.get(owner, b"") + segment
        if segment.endswith(b"\n") and not self._verbose:
            terminated = TERMINATED_LINE_RE.match(line)
            if terminated and int(terminated.group(1)) == rank and owner not in self._carry:
                self.terminated.add(rank)
                return
        prefix = b"[%d]<%s>:" % (rank, stream.encode()) if self._tag_output else b""
        open_owner, may_continue = self._open.get(stream, (None, False))
        if open_owner is not None and open_owner != owner:
            self._write(stream, b"\n")  # never finish another rank's line
        if open_owner == owner and may_continue:
            prefix = b""
        self._write(stream, prefix + segment)
        if segment.endswith(b"\n"):
            self._open.pop(stream, None)
            self._carry.pop(owner, None)
            self._remember(owner, line)
        elif segment.endswith(b"\r"):
            self._open[stream] = (owner, False)  # a redrawn line: not a line to remember
            self._carry.pop(owner, None)
        else:
            self._open[stream] = (owner, True)
            self._carry[owner] = line

    def _remember(self, owner: Tuple[int, str], line: bytes) -> None:
        ending = ENDING_JOB_RE.match(line)
        if ending and int(ending.group(1) or ending.group(2)) == owner[0]:
            code = int(ending.group(3)) if ending.group(3) else 1
            self._ending.append(RankFailure(owner[0], "abort", code=code))
        engine_abort = ENGINE_ABORT_RE.match(line)
        if engine_abort and int(engine_abort.group(1)) == owner[0]:
            self._ending.append(RankFailure(owner[0], "abort", code=int(engine_abort.group(2))))
        tail = self.tails.setdefault(owner[0], collections.deque(maxlen=TAIL_LINES))
        tail.append(line.decode("utf-8", "replace").rstrip("\r\n"))

    def _mpirun_line(self, stream: str, segment: bytes) -> None:
        if self._mpirun_muted:
            return
        text = segment.decode("utf-8", "replace").rstrip("\r\n")
        for line in self._messages[stream].add_line(text):
            self._write_line(stream, line)

    def _write_line(self, stream: str, line: str) -> None:
        if stream in self._open:
            self._write(stream, b"\n")
            del self._open[stream]
        self._write(stream, line.encode("utf-8", "replace") + b"\n")

