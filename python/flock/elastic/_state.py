"""State: what an elastic job commits, restores and keeps alike on every rank.

``State(**values)`` makes each value an attribute (``state.step``,
``state.epoch``, lists, dicts). A value with ``state_dict``/``load_state_dict``
(a sampler, a learning-rate scheduler) is saved through them. Subclasses add
framework objects (flock.torch.elastic.TorchState: a model and an optimizer)
by overriding ``_snapshot``/``_apply`` and the block hooks (``_block_of``,
``_new_block``, ``_bind``: tensors stored as raw bytes, restored in place).

- ``commit()``: this state becomes the one ``restore()`` returns to; under
  ``flockrun --elastic`` rank 0 also writes it to disk atomically, and every rank
  learns whether flockrun asked the job to end here (the hosts changed), in
  which case commit raises HostsUpdatedInterrupt right after saving.
- ``restore()``: back to the last commit (in memory, on this rank).
- ``sync()``: rank 0's state on every rank.
"""

import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from flock import basics
from flock.elastic import _control
from flock.elastic._agree import BlockBroadcast, share, share_blocks, text
from flock.elastic._commit_store import CommitStore, CorruptCommit, read_data
from flock.elastic._packing import no_blocks, pack, refuse_blocks, unpack
from flock.errors import FlockElasticError

_OK, _RESET, _FAILED = 0, 1, 2
_RESERVED = ("commits", "resumed_from")


class HostsUpdatedInterrupt(Exception):
    """The job ends at this commit to be relaunched on the hosts available now."""


def _stateful(value) -> bool:
    return hasattr(value, "state_dict") and hasattr(value, "load_state_dict")


@dataclass
class _Loaded:
    """A skeleton bound to this rank's objects: fill ``buffers``, then ``finish()``."""
    meta: Dict[str, Any]
    buffers: List[np.ndarray]
    finish: Callable[[], None]


@dataclass
class _Kept:
    """Rank 0's last commit, for restore(): its blocks in memory, or in its file."""
    skeleton: bytes
    blocks: Optional[List[np.ndarray]] = None
    path: Optional[str] = None

    def fill(self, buffers: Sequence[np.ndarray]) -> None:
        if self.blocks is None:
            read_data(self.path, buffers)
            return
        for target, kept in zip(buffers, self.blocks, strict=True):
            np.copyto(target, kept)


class State:
    """The values of an elastic job (framework-neutral: pickled)."""

    def __init__(self, **values) -> None:
        self._names = list(values)
        self._callbacks = []
        self._saved = None
        self.commits = 0
        directory = _control.elastic_directory()
        self._store = CommitStore(directory) if directory else None
        self.resumed_from = None  # the newest commit's world_size, launch, time, once resumed
        for name, value in values.items():
            if name.startswith("_") or name in _RESERVED or hasattr(type(self), name):
                raise ValueError(f"{type(self).__name__}: {name!r} cannot be a value's name "
                                 f"(the state uses it)")
            setattr(self, name, value)

    # --- what is saved ------------------------------------------------------
    def _snapshot(self) -> Dict:
        return {name: self._value_state(getattr(self, name)) for name in self._names}

    @staticmethod
    def _value_state(value):
        return value.state_dict() if _stateful(value) else value

    def _apply(self, snapshot: Dict) -> None:
        for name in self._names:
            if name not in snapshot:
                continue
            current = getattr(self, name)
            if _stateful(current):
                current.load_state_dict(snapshot[name])
            else:
                setattr(self, name, snapshot[name])

    # --- how it is stored (TorchState keeps tensors out of the pickle) -------
    def _block_of(self, obj):
        """(meta, buffer) when obj is stored as a block of bytes (_packing.py)."""
        return no_blocks(obj)

    def _new_block(self, meta):
        """(object, writable uint8 array) standing for a block being restored."""
        return refuse_blocks(meta)

    def _bind(self, state, placed: List[Any], buffers: List[np.ndarray]) -> Callable[[], None]:
        """Point buffers at live memory where a block can be restored in place (a
        subclass may), and return what applies the state once they are filled."""
        return lambda: self._apply(state)

    def _pack(self, **meta) -> Tuple[bytes, List[np.ndarray]]:
        return pack(dict(meta, state=self._snapshot()), self._block_of)

    def _load(self, skeleton) -> _Loaded:
        obj, placed, buffers = unpack(bytes(skeleton), self._new_block)
        finish = self._bind(obj["state"], placed, buffers)
        return _Loaded({k: v for k, v in obj.items() if k != "state"}, buffers, finish)

    def _keep(self, skeleton: bytes, blocks: Sequence[np.ndarray]) -> None:
        """Copy the blocks for restore(), into last commit's arrays where they fit."""
        old = self._saved.blocks if self._saved is not None and self._saved.blocks else []
        kept = []
        for i, block in enumerate(blocks):
            fits = i < len(old) and old[i].nbytes == block.nbytes
            target = old[i] if fits else np.empty(block.nbytes, dtype=np.uint8)
            np.copyto(target, block)
            kept.append(target)
        self._saved = _Kept(skeleton, kept)

    # --- the user's calls ---------------------------------------------------
    def register_reset_callbacks(self, callbacks: Iterable[Callable[[], None]]) -> None:
        """Functions called (in order, no arguments) when the job resumes from a commit
        on a new world: scale the learning rate, rebuild the topology..."""
        self._callbacks.extend(callbacks)

    def on_reset(self) -> None:
        for callback in self._callbacks:
            callback()

    def commit(self) -> None:
        """Save this state, then check hosts (collective).

        Rank 0 copies its state and keeps it (and, under flockrun --elastic, writes
        it to disk); the other ranks keep nothing, which spares them a copy of a
        large model at every commit: restore() and a relaunch both take rank 0's."""
        self.commits += 1
        code, message = _OK, None
        if basics.rank() == 0:
            self._keep(*self._pack(world_size=basics.size(), time=time.time(),
                                   launch=_control.launch_number()))
            if self._store is not None:
                code, message = self._write(self._saved)
        code, said = share(code, message, "commit")
        if code == _FAILED:
            raise FlockElasticError(text(said))
        if code == _RESET:
            raise HostsUpdatedInterrupt(text(said))

    def _write(self, kept: _Kept):
        try:
            self._store.save(kept.skeleton, kept.blocks)
        except FlockElasticError as exc:
            return _FAILED, str(exc).encode()
        reason = _control.reset_request(self._store.directory, _control.launch_number())
        return (_RESET, reason.encode()) if reason else (_OK, None)

    def check_host_updates(self) -> None:
        """Raise HostsUpdatedInterrupt (on every rank) if flockrun asked for a reset.

        commit() already checks; call this to end the job between commits (what is
        done since the last commit is then lost)."""
        reason = None
        if self._store is not None and basics.rank() == 0:
            reason = _control.reset_request(self._store.directory, _control.launch_number())
        code, said = share(_RESET if reason else _OK, reason.encode() if reason else None,
                           "check_host_updates")
        if code == _RESET:
            raise HostsUpdatedInterrupt(text(said))

    def restore(self) -> None:
        """Back to the last commit on every rank (collective): rank 0's committed state,
        the one a relaunch resumes from (before the first commit: the state run()
        started from; without run(), nothing to go back to)."""
        code, data, loaded = _OK, None, None
        if basics.rank() == 0 and self._saved is not None:
            try:
                loaded = self._load(self._saved.skeleton)
                self._saved.fill(loaded.buffers)
                code, data = _RESET, self._saved.skeleton
            except Exception as exc:  # pylint: disable=broad-except  # every rank must hear
                code, data = _FAILED, f"cannot restore the last commit: {exc}".encode()
        self._receive(code, data, loaded, "restore")

    def sync(self) -> None:
        """Make every rank's state rank 0's (collective)."""
        root = basics.rank() == 0
        skeleton, blocks = self._pack() if root else (None, None)
        _, data = share(_OK, skeleton, "sync")
        if root:
            share_blocks(blocks, "sync")  # straight from rank 0's live memory
            return
        loaded = _fitted(self._load, data)
        share_blocks(loaded.buffers, "sync")
        _apply_loaded(loaded)

    def _receive(self, code: int, data, loaded: Optional[_Loaded], name: str):
        """Rank 0's decision everywhere; on _RESET its filled blocks into every rank's
        and the state applied: then the commit's meta (None when nothing applied)."""
        code, data = share(code, data, name)
        if code == _FAILED:
            raise FlockElasticError(text(data))
        if code != _RESET:
            return None
        if loaded is None:
            loaded = _fitted(self._load, data)
        share_blocks(loaded.buffers, name)
        _apply_loaded(loaded)
        return loaded.meta

    # --- used by run() ------------------------------------------------------
    def _resume(self) -> bool:
        """Load the newest whole commit on every rank (True), or sync rank 0's state
        (False).

        Rank 0 shares a commit's skeleton first, so that every rank binds it to its
        objects while rank 0 reads the data, and it broadcasts each block as soon as
        it is read. The data's checksum is known only at its end: a damaged commit is
        then set aside and every rank goes on to the one before it, over whatever the
        damaged one left."""
        root = basics.rank() == 0
        commits = self._store.whole_commits() if root and self._store is not None else None
        for attempt in itertools.count():
            name = f"resume{attempt}"
            code, data, commit = self._next_commit(commits) if root else (_OK, None, None)
            code, data = share(code, data, name)
            if code == _FAILED:
                raise FlockElasticError(text(data))
            if code == _OK:
                break
            loaded = _fitted(self._load, data)
            damage = _read_and_share(loaded, commit, name)
            verdict, why = share(_FAILED if damage else _OK, damage, name + ".verdict")
            if verdict == _OK:
                _apply_loaded(loaded)
                self.resumed_from = loaded.meta
                if root:  # restore() reads it again rather than keep a copy
                    self._saved = _Kept(commit.skeleton, path=commit.path)
                    commits.close()
                return True
            if root:
                self._store.set_aside(commit.path, text(why))
        self.sync()
        if root:  # restore() before the first commit: this start
            self._keep(*self._pack(world_size=basics.size()))
        return False

    def _next_commit(self, commits):
        """Rank 0: (code, data, commit) for the next whole commit to try."""
        try:
            commit = next(commits, None) if commits is not None else None
        except FlockElasticError as exc:
            return _FAILED, str(exc).encode(), None
        if commit is not None:
            return _RESET, commit.skeleton, commit
        error = self._store.no_commit_error() if self._store is not None else None
        return (_FAILED, str(error).encode(), None) if error else (_OK, None, None)

    def __repr__(self) -> str:
        shown: List[str] = [f"{name}={getattr(self, name)!r}" for name in self._names]
        return f"{type(self).__name__}({', '.join(shown)})"


def _fitted(func, *args):
    """func(*args), its error named as a commit that does not fit (every rank has the
    same skeleton and runs the same program, so every rank raises it)."""
    try:
        return func(*args)
    except Exception as exc:
        raise FlockElasticError(f"the commit does not fit this job's state: "
                                f"{type(exc).__name__}: {exc}") from exc


def _apply_loaded(loaded: _Loaded) -> None:
    _fitted(loaded.finish)


def _read_and_share(loaded: _Loaded, commit, name: str) -> Optional[bytes]:
    """Rank 0 (holding ``commit``) reads its data into the bound buffers, broadcasting
    each block once read; the others receive. Rank 0's reason when the data is
    damaged (the blocks are broadcast all the same: every rank waits for them)."""
    sender = BlockBroadcast(loaded.buffers, name)
    damage = None
    if commit is not None:
        try:
            commit.read_data(loaded.buffers, progress=sender.ready)
        except (OSError, CorruptCommit) as exc:
            damage = str(exc).encode()
    sender.finish()
    return damage


class ObjectState(State):
    """Horovod's name for a State of plain Python values."""
