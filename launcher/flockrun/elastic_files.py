"""The elastic directory: where commits live and how flockrun and rank 0 talk.

flockrun and the job share two small JSON files in ``--elastic-dir`` (the job's
side is flock/elastic/_control.py; docs/elastic.md describes the protocol):

- ``control.json``, written by flockrun: ``{"launch": L, "reset": "grow" |
  "shrink", "reason": "..."}`` asks launch L to end at its next commit;
- ``restart.json``, written by rank 0: ``{"launch": L}`` says launch L ended at a
  commit because of that request, so its exit status 0 means "relaunch me", not
  "training is done".

Both are written to a temporary file and renamed, so neither side reads half a file.
"""

import json
import os
from typing import Optional

from flockrun.elastic_plan import Change
from flockrun.errors import LaunchError

CONTROL_FILE = "control.json"
RESTART_FILE = "restart.json"
DEFAULT_DIR = ".flock-elastic"


def prepare_directory(path: str) -> str:
    """The absolute elastic directory, created and checked writable (LaunchError if not)."""
    path = os.path.abspath(path)
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".write-test-{os.getpid()}")
        with open(probe, "w", encoding="utf-8") as handle:
            handle.write("ok")
        os.remove(probe)
    except OSError as exc:
        raise LaunchError(f"the elastic directory {path} is not writable: "
                          f"{exc.strerror or exc}; commits could not be saved there "
                          f"(choose another with --elastic-dir)") from None
    return path


def _write_json(path: str, value: dict) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(temporary, path)


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def request_reset(directory: str, launch: int, change: Change) -> None:
    """Ask launch ``launch`` to end at its next commit."""
    _write_json(os.path.join(directory, CONTROL_FILE),
                {"launch": launch, "reset": change.kind, "reason": change.reason})


def clear_messages(directory: str) -> None:
    """Forget the previous launch's requests and answers before the next starts."""
    for name in (CONTROL_FILE, RESTART_FILE):
        try:
            os.remove(os.path.join(directory, name))
        except FileNotFoundError:
            pass


def restart_requested(directory: str, launch: int) -> bool:
    """Did launch ``launch`` end at a commit to be relaunched on a new world?"""
    answer = _read_json(os.path.join(directory, RESTART_FILE))
    return answer is not None and answer.get("launch") == launch
