"""Rank 0 decides, every rank learns the decision: a code and bytes, broadcast.

Commits are read and written by rank 0 alone; what it found (a commit, nothing,
an error and its message) must reach every rank, or a rank left waiting would
hang. ``share`` does that with flock's numpy broadcast, so it works for any
framework.
"""

from typing import Sequence, Tuple

import numpy as np

from flock import basics
from flock.numpy import _ops


def share(code: int, data, name: str) -> Tuple[int, memoryview]:
    """Rank 0's (code, data) on every rank; other ranks' arguments are ignored.

    data is any bytes-like object (None: empty). It travels without extra copies:
    a writable buffer on rank 0 is sent as it is, and the others get a view of the
    array they received into."""
    root = basics.rank() == 0
    length = len(memoryview(data).cast("B")) if root and data is not None else 0
    header = np.array([code, length] if root else [0, 0], dtype=np.int64)
    _ops.broadcast_(header, 0, name=f"flock.elastic.{name}.header")
    code, length = int(header[0]), int(header[1])
    if length == 0:
        return code, memoryview(b"")
    if root and memoryview(data).readonly:
        data = bytearray(data)  # a short message (a reason, an error): copying is free
    payload = np.frombuffer(data, dtype=np.uint8) if root else np.empty(length, np.uint8)
    _ops.broadcast_(payload, 0, name=f"flock.elastic.{name}.payload")
    return code, memoryview(data).cast("B") if root else memoryview(payload)


class BlockBroadcast:
    """Rank 0's bytes into every rank's buffers, in place (collective; every rank
    passes buffers of the same sizes, in the same order). Nothing is allocated for the
    data. Rank 0 may post its blocks as they become ready (``ready``: while it reads a
    commit), in batches of at least ``batch_bytes``: each post is one negotiation
    among the ranks, too slow to pay per tensor. The others post them all at once."""

    def __init__(self, buffers: Sequence[np.ndarray], name: str,
                 batch_bytes: int = 16 << 20) -> None:
        self._buffers, self._name, self._batch_bytes = buffers, name, batch_bytes
        self._handles, self._posted, self._seen, self._waiting = [], 0, 0, 0
        self._alone = basics.size() == 1

    def ready(self, count: int) -> None:
        """The first ``count`` buffers are filled: post them once enough wait."""
        self._waiting += sum(b.nbytes for b in self._buffers[self._seen:count])
        self._seen = max(self._seen, count)
        if self._waiting >= self._batch_bytes:
            self._post_through(count)

    def _post_through(self, count: int) -> None:
        for i in range(self._posted, count):
            if self._buffers[i].nbytes and not self._alone:
                self._handles.append(_ops.broadcast_nonblocking_(
                    self._buffers[i], 0, name=f"flock.elastic.{self._name}.block{i}"))
        self._posted, self._waiting = max(self._posted, count), 0

    def finish(self) -> None:
        """Post the rest, then wait for every block."""
        self._post_through(len(self._buffers))
        for handle in self._handles:
            _ops.synchronize(handle)
        self._handles = []


def share_blocks(buffers: Sequence[np.ndarray], name: str) -> None:
    """Every buffer broadcast from rank 0, in place (see BlockBroadcast)."""
    BlockBroadcast(buffers, name).finish()


def text(view) -> str:
    """A shared message as text."""
    return bytes(view).decode("utf-8", "replace")
