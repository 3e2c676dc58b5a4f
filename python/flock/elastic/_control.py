"""The job's side of the files it shares with ``flockrun --elastic``.

flockrun (launcher/flockrun/elastic_files.py) sets FLOCK_ELASTIC_DIR and
FLOCK_ELASTIC_LAUNCH for every launch and may write ``control.json`` to ask the
launch to end at its next commit; rank 0 answers with ``restart.json`` just
before the job ends that way, so that flockrun relaunches instead of finishing.
"""

import json
import os
from typing import Optional

CONTROL_FILE = "control.json"
RESTART_FILE = "restart.json"


def elastic_directory() -> Optional[str]:
    """The commit directory flockrun --elastic gave this job, None outside one."""
    return os.environ.get("FLOCK_ELASTIC_DIR") or None


def launch_number() -> int:
    """Which launch of the elastic job this is (1 for the first, 0 outside one)."""
    try:
        return int(os.environ.get("FLOCK_ELASTIC_LAUNCH", "0"))
    except ValueError:
        return 0


def reset_request(directory: str, launch: int) -> Optional[str]:
    """flockrun's reason for ending this launch at its next commit, or None."""
    try:
        with open(os.path.join(directory, CONTROL_FILE), encoding="utf-8") as handle:
            request = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(request, dict) or request.get("launch") != launch:
        return None
    return str(request.get("reason") or request.get("reset") or "the hosts changed")


def mark_restart(directory: str, launch: int) -> None:
    """Tell flockrun this launch ends to be relaunched (written before the ranks exit)."""
    path = os.path.join(directory, RESTART_FILE)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump({"launch": launch}, handle)
    os.replace(path + ".tmp", path)
