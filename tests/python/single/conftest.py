"""Shared setup of the single-process tests.

They call init() without a launcher, in this process and in the subprocesses
they start (which inherit this environment): FLOCK_QUIET keeps flock's "running
as 1 rank" note out of their output. test_launch_notes.py removes it to test the note.
"""

import os

os.environ.setdefault("FLOCK_QUIET", "1")
