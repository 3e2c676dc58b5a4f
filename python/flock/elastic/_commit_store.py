"""Commits on disk: atomic, checksummed, and never fewer than one that is whole.

A commit is one file ``commit-NNNNNNNN.flock`` in the elastic directory: a magic
line, the lengths of the skeleton and of the data (8 bytes each, big-endian), the
CRC-32 of each (4 bytes each: it finds torn writes and flipped bits at 5 GB/s,
where SHA-256 took 0.2 s of a 205 MB restore here), the skeleton (a small pickle, _packing.py) and the data (the
state's blocks, one after the other). ``save`` writes a temporary file straight
from the blocks, fsyncs it, renames it into place and fsyncs the directory, and
only then removes commits older than the previous one: whatever moment the
writer dies at, the newest whole commit is still there.

``load_latest(into)`` takes the newest commit that is whole. It checks the
skeleton's checksum, asks ``into(skeleton)`` for the buffers the data belongs in
(a live model's parameters: nothing is allocated twice), reads the data into
them and checks its checksum. A damaged commit is renamed ``*.corrupt`` (kept for
inspection) with a warning naming it, and the previous one is read, into fresh
buffers, over whatever the damaged one left. Only rank 0 calls these (state.py).
"""

import os
import re
import struct
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from flock.errors import FlockElasticError

MAGIC = b"FLOCK-COMMIT-2\n"
_FIELDS = struct.Struct(">QQII")  # skeleton and data: lengths, then CRC-32s
_HEADER = len(MAGIC) + _FIELDS.size
_NAME = re.compile(r"^commit-(\d{8})\.flock$")
KEEP = 2  # the newest commit and the one before it

# into(skeleton) -> (what the caller keeps, the buffers the data is read into).
Into = Callable[[bytes], Tuple[Any, Sequence[np.ndarray]]]


@dataclass(frozen=True)
class Commit:
    number: int
    path: str
    skeleton: bytes
    loaded: Any  # what into() returned first, its buffers now filled


class CorruptCommit(Exception):
    """A commit file whose header, length or checksum does not hold."""


class CommitStore:
    """The commits in one directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _numbers(self) -> List[int]:
        try:
            names = os.listdir(self.directory)
        except (FileNotFoundError, NotADirectoryError):
            return []  # save() makes it, or says why it cannot
        except OSError as exc:
            raise FlockElasticError(f"cannot read the commit directory {self.directory}: "
                                    f"{exc.strerror or exc}") from None
        return sorted(int(m.group(1)) for m in map(_NAME.match, names) if m)

    def _path(self, number: int) -> str:
        return os.path.join(self.directory, f"commit-{number:08d}.flock")

    def save(self, skeleton: bytes, blocks: Sequence[np.ndarray] = ()) -> str:
        """Write a new commit; FlockElasticError (the previous commit kept) when it fails."""
        numbers = self._numbers()
        path = self._path((numbers[-1] if numbers else 0) + 1)
        temporary = os.path.join(self.directory, f".{os.path.basename(path)}.tmp")
        try:
            os.makedirs(self.directory, exist_ok=True)
            _write_synced(temporary, skeleton, blocks)
            os.replace(temporary, path)
            _sync_directory(self.directory)
        except OSError as exc:
            _remove_quietly(temporary)
            kept = f"the previous commit {self._path(numbers[-1])} is kept" if numbers \
                else "there is no earlier commit"
            raise FlockElasticError(f"cannot write commit {path}: {exc.strerror or exc}; "
                                    f"{kept}") from None
        for old in numbers[:-(KEEP - 1)] if KEEP > 1 else numbers:
            _remove_quietly(self._path(old))
        return path

    def load_latest(self, into: Into) -> Optional[Commit]:
        """The newest whole commit, read through into(); None when there is none;
        FlockElasticError when every commit is damaged."""
        damaged = []
        for number in reversed(self._numbers()):
            path = self._path(number)
            try:
                skeleton, loaded = _read(path, into)
            except (OSError, CorruptCommit) as exc:
                damaged.append(f"{path}: {exc}")
                _set_aside(path, exc)
                continue
            return Commit(number, path, skeleton, loaded)
        if damaged:
            raise FlockElasticError("no commit can be restored: " + "; ".join(damaged) +
                                    " (renamed *.corrupt; remove them to start afresh)")
        return None


def _write_synced(path: str, skeleton: bytes, blocks: Sequence[np.ndarray]) -> None:
    """Header (its checksums filled in last), skeleton, blocks; then fsync."""
    data_crc, data_length = 0, 0
    with open(path, "wb") as handle:
        handle.write(bytes(_HEADER))
        handle.write(skeleton)
        for block in blocks:
            handle.write(block)  # straight from the block's memory
            data_crc = zlib.crc32(block, data_crc)
            data_length += block.nbytes
        handle.seek(0)
        handle.write(MAGIC + _FIELDS.pack(len(skeleton), data_length, zlib.crc32(skeleton),
                                          data_crc))
        handle.flush()
        os.fsync(handle.fileno())


def _read(path: str, into: Into):
    """(skeleton, into's result with its buffers filled); CorruptCommit when the file
    is not whole."""
    with open(path, "rb", buffering=0) as handle:
        head = _read_exactly(handle, _HEADER, "its header")
        if head[:len(MAGIC)] != MAGIC:
            raise CorruptCommit("it does not start with a flock commit header (format 2)")
        skeleton_length, data_length, skeleton_crc, data_crc = \
            _FIELDS.unpack_from(head, len(MAGIC))
        size = os.fstat(handle.fileno()).st_size
        if size != _HEADER + skeleton_length + data_length:
            raise CorruptCommit(f"it is {size} bytes long, its header says "
                                f"{_HEADER + skeleton_length + data_length}")
        skeleton = _read_exactly(handle, skeleton_length, "its skeleton")
        if zlib.crc32(skeleton) != skeleton_crc:
            raise CorruptCommit("the checksum of its skeleton does not match")
        loaded, buffers = into(skeleton)
        described = sum(b.nbytes for b in buffers)
        if described != data_length:
            raise CorruptCommit(f"its state describes {described} bytes of data, its header "
                                f"says {data_length}")
        if _read_into(handle, buffers) != data_crc:
            raise CorruptCommit("the checksum of its data does not match")
    return skeleton, loaded


def read_data(path: str, buffers: Sequence[np.ndarray]) -> None:
    """Read a commit's data again into buffers (restore() after a resume, which keeps
    no copy); FlockElasticError when the file is no longer whole."""
    try:
        with open(path, "rb", buffering=0) as handle:
            head = _read_exactly(handle, _HEADER, "its header")
            skeleton_length, data_length, _, data_crc = _FIELDS.unpack_from(head, len(MAGIC))
            if head[:len(MAGIC)] != MAGIC or data_length != sum(b.nbytes for b in buffers):
                raise CorruptCommit("its header changed since it was restored")
            handle.seek(_HEADER + skeleton_length)
            if _read_into(handle, buffers) != data_crc:
                raise CorruptCommit("the checksum of its data does not match")
    except (OSError, CorruptCommit) as exc:
        raise FlockElasticError(f"cannot read commit {path} again: {exc}") from None


def _read_exactly(handle, count: int, what: str) -> bytes:
    data = handle.read(count) if count else b""
    if len(data) != count:
        raise CorruptCommit(f"{what} ended after {len(data)} of {count} bytes")
    return data


def _read_into(handle, buffers: Sequence[np.ndarray]) -> int:
    """Fill every buffer from the file, in order; the CRC-32 of what was read."""
    crc = 0
    for buffer in buffers:
        view, done = memoryview(buffer).cast("B"), 0
        while done < len(view):
            count = handle.readinto(view[done:])
            if not count:
                raise CorruptCommit("its data ended early")
            done += count
        crc = zlib.crc32(view, crc)
    return crc


def _sync_directory(directory: str) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _set_aside(path: str, why: Exception) -> None:
    print(f"flock.elastic: warning: commit {path} is damaged ({why}); it is renamed "
          f"{os.path.basename(path)}.corrupt and the commit before it is used",
          file=sys.stderr, flush=True)
    try:
        os.replace(path, path + ".corrupt")
    except OSError:
        pass
