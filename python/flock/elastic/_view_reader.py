"""A read-only file over bytes already in memory, without copying them.

A commit of a large model is hundreds of MB; ``io.BytesIO(data)`` would copy it
once more before ``torch.load`` reads it, and on a machine where fresh memory
costs ~0.3 GB/s to touch that copy alone takes most of a second.
"""

import io


class ViewReader(io.RawIOBase):
    """Reads (and seeks in) a bytes-like object in place."""

    def __init__(self, data) -> None:
        super().__init__()
        self._view = memoryview(data).cast("B")
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._view)}
        self._position = max(0, base[whence] + offset)
        return self._position

    def readinto(self, buffer) -> int:
        count = max(0, min(len(buffer), len(self._view) - self._position))
        memoryview(buffer).cast("B")[:count] = self._view[self._position:self._position + count]
        self._position += count
        return count
