"""Shared setup for the flockrun tests.

The tests run from a source tree (no install needed): launcher/ goes first
on sys.path here, and on PYTHONPATH for the end-to-end subprocesses.
"""

import os
import sys
from pathlib import Path

import pytest

LAUNCHER_DIR = Path(__file__).resolve().parents[3] / "launcher"
sys.path.insert(0, str(LAUNCHER_DIR))


@pytest.fixture
def launcher_env():
    """A copy of os.environ in which ``python -m flockrun`` finds this tree."""
    env = dict(os.environ)
    # Variables of the caller's own flock setup would leak into the ranks.
    for name in [n for n in env if n.startswith("FLOCK_")]:
        del env[name]
    paths = [str(LAUNCHER_DIR)] + [p for p in [env.get("PYTHONPATH")] if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env
