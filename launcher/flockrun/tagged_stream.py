"""Reading mpirun's ``--tag-output`` streams back into whole lines per rank.

Vocabulary. mpirun forwards what each rank writes in *chunks*, as they arrive
from the rank's pipe, so a chunk may end in the middle of a line, and the next
chunk on mpirun's stdout may come from another rank. With ``--tag-output``
mpirun starts every chunk, and every line inside a chunk, with a *tag*
``[JOB,RANK]<stdout>:`` (or ``<stderr>``, ``<stddiag>``). A *fragment* is the
text between two tags; it belongs to the rank its tag names and holds at most
one line end. Text that follows a line end without a tag is mpirun's own (its
messages and boxes), which this module gives the owner ``None``.

``TagSplitter`` turns one of mpirun's output streams into fragments;
``LineJoiner`` joins the fragments of each owner into *segments*: text ending
in ``\\n`` or ``\\r`` (a progress bar redraws its line with ``\\r``). Both are
pure: bytes in, values out, no I/O.
"""

import re
from typing import Dict, Hashable, List, Optional, Tuple

TAG_RE = re.compile(rb"\[(\d+),(\d+)\]<(stdout|stderr|stddiag)>:")

# What an incomplete tag at the end of the data read so far can look like.
_TAG_START_RE = re.compile(rb"\[\d*(?:,\d*(?:\](?:<[a-z]*>?)?)?)?\Z")
_LONGEST_TAG = 64

_LINE_END_RE = re.compile(rb"[\r\n]")

# Owner of a fragment: (rank, "stdout" | "stderr"), or None for mpirun itself.
Owner = Optional[Tuple[int, str]]


class TagSplitter:
    """Splits one of mpirun's output streams into (owner, bytes) fragments."""

    def __init__(self) -> None:
        self._owner: Owner = None
        self._held = b""  # the start of what may be a tag cut by a read

    def feed(self, data: bytes) -> List[Tuple[Owner, bytes]]:
        """The fragments completed by data (possibly none)."""
        data = self._held + data
        self._held = b""
        fragments: List[Tuple[Owner, bytes]] = []
        position = 0
        for tag in TAG_RE.finditer(data):
            self._emit(data[position:tag.start()], fragments)
            stream = "stdout" if tag.group(3) == b"stdout" else "stderr"
            self._owner = (int(tag.group(2)), stream)
            position = tag.end()
        rest = data[position:]
        cut = _TAG_START_RE.search(rest, max(0, len(rest) - _LONGEST_TAG))
        if cut is not None:
            self._held = rest[cut.start():]
            rest = rest[:cut.start()]
        self._emit(rest, fragments)
        return fragments

    def finish(self) -> List[Tuple[Owner, bytes]]:
        """What is still held back, once the stream has ended."""
        fragments: List[Tuple[Owner, bytes]] = []
        self._emit(self._held, fragments)
        self._held = b""
        return fragments

    def _emit(self, text: bytes, fragments: List[Tuple[Owner, bytes]]) -> None:
        """Give text to the current owner up to its line end; the rest is mpirun's."""
        if not text:
            return
        if self._owner is not None:
            end = text.find(b"\n")
            if end < 0:
                fragments.append((self._owner, text))
                return
            fragments.append((self._owner, text[:end + 1]))
            self._owner = None  # the rank's next line would carry a tag
            text = text[end + 1:]
        if text:
            fragments.append((None, text))


class LineJoiner:
    """Joins fragments per owner into segments ending in a line end.

    ``partial`` hands out an owner's incomplete text (for a prompt or a line
    that stays unfinished), ``take_partial`` removes it once it is written.
    """

    def __init__(self) -> None:
        self._pending: Dict[Hashable, bytes] = {}

    def add(self, owner: Hashable, text: bytes) -> List[bytes]:
        """The segments that text completes for owner, in order."""
        text = self._pending.pop(owner, b"") + text
        segments = []
        start = 0
        for end in _LINE_END_RE.finditer(text):
            segments.append(text[start:end.end()])
            start = end.end()
        if start < len(text):
            self._pending[owner] = text[start:]
        return segments

    def partial(self, owner: Hashable) -> bytes:
        return self._pending.get(owner, b"")

    def take_partial(self, owner: Hashable) -> bytes:
        return self._pending.pop(owner, b"")

    def owners_with_partial(self) -> List[Hashable]:
        return list(self._pending)
