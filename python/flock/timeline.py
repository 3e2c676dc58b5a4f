"""Timeline: a Chrome trace-event file per rank of what flock and you did.

Recording starts at init() when FLOCK_TIMELINE is set (``flockrun
--timeline-filename``), or with ``timeline_start(path)``. Rank r writes
``path`` with ``.rank<r>`` before the extension, or with ``{rank}`` replaced
when the path contains it. Open the files in https://ui.perfetto.dev or
chrome://tracing; ``flock-timeline merge all.json path`` (timeline_merge.py)
writes one file with every rank as a process row. Your own activities appear on
the row of the name you give.
"""

import contextlib

from flock._core_loader import core


def timeline_start(path):
    """Starts recording to ``path`` (per rank, see above)."""
    core.timeline_start(path)


def timeline_stop():
    """Stops recording and closes the file."""
    core.timeline_stop()


def timeline_start_activity(tensor_name, activity_name):
    """Opens a span ``activity_name`` on the row ``tensor_name``. Returns whether a timeline
    is being recorded (False: nothing was recorded, as Bluefog)."""
    return core.timeline_begin(tensor_name, activity_name)


def timeline_end_activity(tensor_name):
    """Closes the innermost open span on the row ``tensor_name``; returns whether a timeline
    is being recorded."""
    return core.timeline_end(tensor_name)


@contextlib.contextmanager
def timeline_context(tensor_name, activity_name):
    """``with timeline_context("step", "FORWARD"): ...`` records the block as a span."""
    timeline_start_activity(tensor_name, activity_name)
    try:
        yield
    finally:
        timeline_end_activity(tensor_name)
