"""State: what an elastic job commits, restores and keeps alike on every rank.

``State(**values)`` makes each value an attribute (``state.step``,
``state.epoch``, lists, dicts). A value with ``state_dict``/``load_state_dict``
(a sampler, a learning-rate scheduler) is saved through them. Subclasses add
framework objects (flock.torch.elastic.TorchState: a model and an optimizer)
by overriding ``_snapshot``/``_apply`` and the serializer.

- ``commit()``: this state becomes the one ``restore()`` returns to; under
  ``flockrun --elastic`` rank 0 also writes it to disk atomically, and every rank
  learns whether flockrun asked the job to end here (the hosts changed), in
  which case commit raises HostsUpdatedInterrupt right after saving.
- ``restore()``: back to the last commit (in memory, on this rank).
- ``sync()``: rank 0's state on every rank.
"""

import pickle
import time
from typing import Callable, Dict, Iterable, List

from flock import basics
from flock.elastic import _control
from flock.elastic._agree import share, text
from flock.elastic._commit_store import CommitStore
from flock.errors import FlockElasticError

_OK, _RESET, _FAILED = 0, 1, 2
_RESERVED = ("commits", "resumed_from")


class HostsUpdatedInterrupt(Exception):
    """The job ends at this commit to be relaunched on the hosts available now."""


def _stateful(value) -> bool:
    return hasattr(value, "state_dict") and hasattr(value, "load_state_dict")


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

    def _serialize(self, obj):
        """obj as a bytes-like object (writable, so that sending it copies nothing)."""
        return bytearray(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def _deserialize(self, data):
        return pickle.loads(data)

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

        Rank 0 serializes its state and keeps it (and, under flockrun --elastic,
        writes it to disk); the other ranks keep nothing, which spares them a copy of
        a large model at every commit: restore() and a relaunch both take rank 0's."""
        self.commits += 1
        code, message = _OK, None
        if basics.rank() == 0:
            self._saved = self._serialize({"world_size": basics.size(), "time": time.time(),
                                           "launch": _control.launch_number(),
                                           "state": self._snapshot()})
            if self._store is not None:
                code, message = self._write(self._saved)
        code, said = share(code, message, "commit")
        if code == _FAILED:
            raise FlockElasticError(text(said))
        if code == _RESET:
            raise HostsUpdatedInterrupt(text(said))

    def _write(self, payload: bytes):
        try:
            self._store.save(payload)
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
        saved = self._saved if basics.rank() == 0 else None
        code, data = share(_RESET if saved is not None else _OK, saved, "restore")
        if code == _RESET:
            self._apply(self._deserialize(data)["state"])

    def sync(self) -> None:
        """Make every rank's state rank 0's."""
        payload = self._serialize(self._snapshot()) if basics.rank() == 0 else None
        _, data = share(_OK, payload, "sync")
        if basics.rank() != 0:
            self._apply(self._deserialize(data))

    # --- used by run() ------------------------------------------------------
    def _resume(self) -> bool:
        """Load the newest commit on every rank (True), or sync rank 0's state (False)."""
        code, data = _OK, None
        if self._store is not None and basics.rank() == 0:
            try:
                found = self._store.load_latest()
            except FlockElasticError as exc:
                code, data = _FAILED, str(exc).encode()
            else:
                code, data = (_RESET, found.payload) if found is not None else (_OK, None)
        code, data = share(code, data, "resume")
        if code == _FAILED:
            raise FlockElasticError(text(data))
        if code == _OK:
            self.sync()
            if basics.rank() == 0:  # restore() before the first commit: this start
                self._saved = self._serialize({"world_size": basics.size(),
                                               "state": self._snapshot()})
            return False
        commit = self._deserialize(data)
        self._apply(commit["state"])
        self._saved = data if basics.rank() == 0 else None
        self.resumed_from = {k: v for k, v in commit.items() if k != "state"}
        return True

    def __repr__(self) -> str:
        shown: List[str] = [f"{name}={getattr(self, name)!r}" for name in self._names]
        return f"{type(self).__name__}({', '.join(shown)})"


class ObjectState(State):
    """Horovod's name for a State of plain Python values."""
