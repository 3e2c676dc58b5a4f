"""Phase durations of named ops from flock timeline files (Chrome trace JSON).

flock's engine writes one file per rank (``tl.json`` -> ``tl.rank0.json``, ...)
with one row per op name; each op is a span (``allreduce``) holding phase spans
(``QUEUED``, ``NEGOTIATING``, ``COMMUNICATE``, ...). ``phase_durations``
returns, per rank, ``{name: {span: [microseconds, in order]}}``.
"""

import glob
import json
import os


def rank_files(path):
    """The per-rank files flock writes for the timeline path ``path``."""
    stem, ext = os.path.splitext(path)
    return sorted(glob.glob("{}.rank*{}".format(stem, ext)))


def _durations(events):
    rows = {e["tid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
    open_spans = {}  # tid -> stack of (span name, begin)
    out = {}
    for e in events:
        if e.get("ph") == "B":
            open_spans.setdefault(e["tid"], []).append((e["name"], e["ts"]))
        elif e.get("ph") == "E" and open_spans.get(e["tid"]):
            span, begin = open_spans[e["tid"]].pop()
            row = out.setdefault(rows.get(e["tid"], str(e["tid"])), {})
            row.setdefault(span, []).append(e["ts"] - begin)
    return out


def phase_durations(path):
    """[per rank: {op name: {span: [durations in µs]}}]; [] when there is no timeline."""
    result = []
    for file in rank_files(path):
        with open(file) as f:
            text = f.read().rstrip()
        if not text.endswith("]"):  # a rank that did not close its file
            text = text.rstrip(",") + "]"
        result.append(_durations(json.loads(text)))
    return result
