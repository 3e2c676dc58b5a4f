"""Commits on disk: atomic, checksummed, and never fewer than one that is whole.

A commit is one file ``commit-NNNNNNNN.flock`` in the elastic directory: a magic
line, the payload's length (8 bytes, big-endian), its SHA-256, then the payload.
``save`` writes a temporary file, fsyncs it, renames it into place and fsyncs the
directory, and only then removes commits older than the previous one: whatever
moment the writer dies at, the newest whole commit is still there. ``load_latest``
takes the newest commit whose checksum holds; a damaged one is renamed
``*.corrupt`` (kept for inspection) with a warning naming it, and the previous one
is used. Only rank 0 calls these (state.py).
"""

import hashlib
import os
import re
import struct
import sys
from dataclasses import dataclass
from typing import List, Optional

from flock.errors import FlockElasticError

MAGIC = b"FLOCK-COMMIT-1\n"
_HEADER = len(MAGIC) + 8 + 32
_NAME = re.compile(r"^commit-(\d{8})\.flock$")
KEEP = 2  # the newest commit and the one before it


@dataclass(frozen=True)
class Commit:
    number: int
    path: str
    payload: memoryview


class CorruptCommit(Exception):
    """A commit file whose header or checksum does not hold."""


def header(payload) -> bytes:
    """What a commit file holds before its payload."""
    return MAGIC + struct.pack(">Q", len(payload)) + hashlib.sha256(payload).digest()


def encode(payload) -> bytes:
    return header(payload) + bytes(payload)


def decode(data) -> memoryview:
    """The payload of a commit file's bytes (a view, not a copy); CorruptCommit when
    they are not whole."""
    data = memoryview(data).cast("B")
    if bytes(data[:len(MAGIC)]) != MAGIC or len(data) < _HEADER:
        raise CorruptCommit("it does not start with a flock commit header")
    (length,) = struct.unpack(">Q", data[len(MAGIC):len(MAGIC) + 8])
    digest, payload = bytes(data[len(MAGIC) + 8:_HEADER]), data[_HEADER:]
    if len(payload) != length:
        raise CorruptCommit(f"it holds {len(payload)} bytes of state, its header says {length}")
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptCommit("its checksum does not match its content")
    return payload


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

    def save(self, payload: bytes) -> str:
        """Write a new commit; FlockElasticError (the previous commit kept) when it fails."""
        numbers = self._numbers()
        path = self._path((numbers[-1] if numbers else 0) + 1)
        temporary = os.path.join(self.directory, f".{os.path.basename(path)}.tmp")
        try:
            os.makedirs(self.directory, exist_ok=True)
            _write_synced(temporary, header(payload), payload)
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

    def load_latest(self) -> Optional[Commit]:
        """The newest whole commit, None when there is none; FlockElasticError when every
        commit is damaged."""
        damaged = []
        for number in reversed(self._numbers()):
            path = self._path(number)
            try:
                payload = decode(_read_whole(path))
            except (OSError, CorruptCommit) as exc:
                damaged.append(f"{path}: {exc}")
                _set_aside(path, exc)
                continue
            return Commit(number, path, payload)
        if damaged:
            raise FlockElasticError("no commit can be restored: " + "; ".join(damaged) +
                                    " (renamed *.corrupt; remove them to start afresh)")
        return None


def _write_synced(path: str, *pieces) -> None:
    with open(path, "wb") as handle:
        for piece in pieces:
            handle.write(piece)
        handle.flush()
        os.fsync(handle.fileno())


def _read_whole(path: str) -> bytearray:
    """The file's bytes, read once into one buffer (no second copy)."""
    with open(path, "rb", buffering=0) as handle:
        data = bytearray(os.fstat(handle.fileno()).st_size)
        view, done = memoryview(data), 0
        while done < len(data):
            count = handle.readinto(view[done:])
            if not count:
                raise CorruptCommit(f"it ended after {done} of {len(data)} bytes")
            done += count
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
