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


def share_blocks(buffers: Sequence[np.ndarray], name: str) -> None:
    """Rank 0's bytes into every rank's buffers, in place (collective; every rank
    passes buffers of the same sizes, in the same order). All broadcasts are in
    flight at once, so the engine fuses them; nothing is allocated for the data."""
    if basics.size() == 1:
        return
    handles = [_ops.broadcast_nonblocking_(buffer, 0, name=f"flock.elastic.{name}.block{i}")
               for i, buffer in enumerate(buffers) if buffer.nbytes]
    for handle in handles:
        _ops.synchronize(handle)


def text(view) -> str:
    """A shared message as text."""
    return bytes(view).decode("utf-8", "replace")
