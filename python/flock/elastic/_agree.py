"""Rank 0 decides, every rank learns the decision: a code and bytes, broadcast.

Commits are read and written by rank 0 alone; what it found (a commit, nothing,
an error and its message) must reach every rank, or a rank left waiting would
hang. ``share`` does that with flock's numpy broadcast, so it works for any
framework.
"""

from typing import Optional, Tuple

import numpy as np

from flock import basics
from flock.numpy import _ops


def share(code: int, data: Optional[bytes], name: str) -> Tuple[int, bytes]:
    """Rank 0's (code, data) on every rank; other ranks' arguments are ignored."""
    root = basics.rank() == 0
    header = np.array([code, len(data or b"")] if root else [0, 0], dtype=np.int64)
    _ops.broadcast_(header, 0, name=f"flock.elastic.{name}.header")
    code, length = int(header[0]), int(header[1])
    if length == 0:
        return code, b""
    payload = np.frombuffer(bytearray(data), dtype=np.uint8) if root \
        else np.empty(length, dtype=np.uint8)
    _ops.broadcast_(payload, 0, name=f"flock.elastic.{name}.payload")
    return code, data if root else payload.tobytes()
