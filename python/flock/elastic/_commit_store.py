"""Commits on disk: atomic, checksummed, and never fewer than one that is whole.

A commit is one file ``commit-NNNNNNNN.flock`` in the elastic directory: a magic
line, the lengths of the skeleton and of the data (8 bytes each, big-endian), the
CRC-32 of each (4 bytes each: it finds torn writes and flipped bits at 5 GB/s,
where SHA-256 took 0.2 s of a 205 MB restore here), the skeleton (a small pickle,
_packing.py) and the data (the state's blocks, one after the other). ``save``
writes a temporary file straight from the blocks, fsyncs it, renames it into place
and fsyncs the directory, and only then removes commits older than the previous
one: whatever moment the writer dies at, the newest whole commit is still there.

``whole_commits()`` opens the commits newest first, each with its header and
skeleton checked; ``OpenCommit.read_data`` then reads the data into the buffers the
caller bound the skeleton to (a live model's parameters: nothing is allocated
twice) and checks its checksum. A damaged commit is renamed ``*.corrupt`` (kept for
inspection) with a warning naming it, and the caller goes on to the previous one.
``load_latest`` does both for one process. Only rank 0 calls these (_state.py).
"""

import os
import re
import struct
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

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


class OpenCommit:
    """A commit file whose header and skeleton are whole; its data not read yet."""

    def __init__(self, number: int, path: str) -> None:
        self.number, self.path = number, path
        self._handle = open(path, "rb", buffering=0)  # pylint: disable=consider-using-with
        try:
            self.skeleton = self._read_head()
        except BaseException:
            self.close()
            raise

    def _read_head(self) -> bytes:
        head = _read_exactly(self._handle, _HEADER, "its header")
        if head[:len(MAGIC)] != MAGIC:
            raise CorruptCommit("it does not start with a flock commit header (format 2)")
        skeleton_length, self.data_length, skeleton_crc, self._data_crc = \
            _FIELDS.unpack_from(head, len(MAGIC))
        size, expected = os.fstat(self._handle.fileno()).st_size, \
            _HEADER + skeleton_length + self.data_length
        if size != expected:
            raise CorruptCommit(f"it is {size} bytes long, its header says {expected}")
        skeleton = _read_exactly(self._handle, skeleton_length, "its skeleton")
        if zlib.crc32(skeleton) != skeleton_crc:
            raise CorruptCommit("the checksum of its skeleton does not match")
        self._data_at = _HEADER + skeleton_length
        return skeleton

    def read_data(self, buffers: Sequence[np.ndarray],
                  progress: Optional[Callable[[int], None]] = None) -> None:
        """Fill the buffers, in order, with the data; progress(n) after the first n are
        full (rank 0 broadcasts each block as soon as it is read). CorruptCommit when
        the data is not whole: the buffers then hold what was read."""
        described = sum(b.nbytes for b in buffers)
        if described != self.data_length:
            raise CorruptCommit(f"its state describes {described} bytes of data, its header "
                                f"says {self.data_length}")
        self._handle.seek(self._data_at)
        crc = 0
        for i, buffer in enumerate(buffers):
            view, done = memoryview(buffer).cast("B"), 0
            while done < len(view):
                count = self._handle.readinto(view[done:])
                if not count:
                    raise CorruptCommit("its data ended early")
                done += count
            crc = zlib.crc32(view, crc)
            if progress is not None:
                progress(i + 1)
        if crc != self._data_crc:
            raise CorruptCommit("the checksum of its data does not match")

    def close(self) -> None:
        self._handle.close()


class CommitStore:
    """The commits in one directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.damaged: List[str] = []  # set aside by the last whole_commits()

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

    def whole_commits(self) -> Iterator[OpenCommit]:
        """The commits whose header and skeleton are whole, newest first (each closed
        when the next is asked for); the others are set aside on the way."""
        self.damaged = []
        for number in reversed(self._numbers()):
            try:
                commit = OpenCommit(number, self._path(number))
            except (OSError, CorruptCommit) as exc:
                self.set_aside(self._path(number), exc)
                continue
            try:
                yield commit
            finally:
                commit.close()

    def set_aside(self, path: str, why) -> None:
        """A damaged commit: renamed *.corrupt, with a warning; remembered for
        no_commit_error."""
        self.damaged.append(f"{path}: {why}")
        _set_aside(path, why)

    def no_commit_error(self) -> Optional[FlockElasticError]:
        """After whole_commits() ran out: the error when it set every commit aside."""
        if not self.damaged:
            return None
        return FlockElasticError("no commit can be restored: " + "; ".join(self.damaged) +
                                 " (renamed *.corrupt; remove them to start afresh)")

    def load_latest(self, into: Into) -> Optional[Commit]:
        """The newest whole commit, read through into(); None when there is none;
        FlockElasticError when every commit is damaged."""
        for commit in self.whole_commits():
            loaded, buffers = into(commit.skeleton)
            try:
                commit.read_data(buffers)
            except (OSError, CorruptCommit) as exc:
                self.set_aside(commit.path, exc)
                continue
            return Commit(commit.number, commit.path, commit.skeleton, loaded)
        error = self.no_commit_error()
        if error is not None:
            raise error
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


def read_data(path: str, buffers: Sequence[np.ndarray]) -> None:
    """Read a commit's data again into buffers (restore() after a resume, which keeps
    no copy); FlockElasticError when the file is no longer whole."""
    try:
        commit = OpenCommit(0, path)
        try:
            commit.read_data(buffers)
        finally:
            commit.close()
    except (OSError, CorruptCommit) as exc:
        raise FlockElasticError(f"cannot read commit {path} again: {exc}") from None


def _read_exactly(handle, count: int, what: str) -> bytes:
    data = handle.read(count) if count else b""
    if len(data) != count:
        raise CorruptCommit(f"{what} ended after {len(data)} of {count} bytes")
    return data


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
