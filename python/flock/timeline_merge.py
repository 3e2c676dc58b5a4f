"""``flock-timeline merge``: one trace file for all the ranks of a job.

Each rank records its own Chrome trace (``FLOCK_TIMELINE=t.json`` or ``flockrun
--timeline-filename t.json`` write ``t.rank0.json``, ``t.rank1.json``, ...): its
events carry ``pid`` = rank, so in one file every rank is a process row of its own,
with one row per tensor name under it. Merging is concatenation, plus two fixes:

- **Clocks.** Each rank counts ``ts`` from the moment it started recording, and
  ranks start at different moments. By default the merged file shifts every rank
  so that the end of the first span on a row every rank has (``init()``'s
  ``flock.set_topology`` allgather, a collective that ends at about the same time
  on every rank) lines up; ``--no-align`` keeps each rank's own clock.
- **Unfinished files.** A rank that died leaves a file without its closing ``]``,
  often cut in the middle of an event (the trace is written through a buffer);
  it is read anyway, up to its last whole event, as the trace viewers do.

Standard library only, so it also runs where flock is not built:
``python python/flock/timeline_merge.py merge OUT.json t.json``.
"""

import argparse
import glob
import json
import os
import re
import sys
from typing import Dict, List, Optional, Sequence

ALIGN_ROW = "flock.set_topology"


def read_trace(path: str) -> List[dict]:
    """The events of one trace file; a file cut short (no closing "]", or a last event
    cut in the middle: one event per line) gives its whole events."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        events = json.loads(text)
    except json.JSONDecodeError:
        events = _whole_events(path, text)
    if not isinstance(events, list):
        raise ValueError(f"{path}: not a trace-event array")
    return events


def _whole_events(path: str, text: str) -> list:
    """The events of an unfinished file: close it after the last line that parses."""
    lines = text.rstrip().split("\n")
    while lines:
        try:
            return json.loads("\n".join(lines).rstrip().rstrip(",") + "\n]")
        except json.JSONDecodeError:
            lines.pop()  # a line cut in the middle of an event
    raise ValueError(f"{path}: not a trace-event file")


def rank_files(path: str) -> List[str]:
    """The per-rank files of a FLOCK_TIMELINE path, in rank order (the path itself if it
    exists): ``t.json`` -> ``t.rank0.json``, ...; ``t.{rank}.json`` -> ``t.0.json``, ..."""
    if os.path.exists(path):
        return [path]
    if "{rank}" in path:
        before, after = path.split("{rank}", 1)
    else:
        stem, ext = os.path.splitext(path)
        before, after = stem + ".rank", ext
    number = re.compile(re.escape(before) + r"(\d+)" + re.escape(after) + r"\Z")
    found = []
    for candidate in glob.glob(glob.escape(before) + "*" + glob.escape(after)):
        match = number.match(candidate)
        if match:
            found.append((int(match.group(1)), candidate))
    return [p for _, p in sorted(found)]


def row_names(events: Sequence[dict]) -> Dict[int, str]:
    """tid -> row name, from the thread_name metadata."""
    return {e["tid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}


def first_span_end(events: Sequence[dict], row: str) -> Optional[float]:
    """When the first outermost span on the named row ended, or None."""
    tids = {tid for tid, name in row_names(events).items() if name == row}
    depth = 0
    for event in events:
        if event.get("tid") not in tids or event.get("ph") not in ("B", "E"):
            continue
        depth += 1 if event["ph"] == "B" else -1
        if depth == 0:
            return float(event["ts"])
    return None


def merge(traces: Sequence[List[dict]], align: bool = True) -> List[dict]:
    """All events of all traces in one list, each rank's clock shifted when aligning."""
    pids = [next((e["pid"] for e in t if "pid" in e), None) for t in traces]
    if len(set(pids)) != len(pids):
        raise ValueError(f"two traces are of the same rank (pids {pids}); give each rank once")
    ends = [first_span_end(t, ALIGN_ROW) for t in traces] if align else []
    shift = align and all(end is not None for end in ends)
    latest = max(ends) if shift else 0.0
    merged: List[dict] = []
    for trace, pid, end in zip(traces, pids, ends or [None] * len(traces)):
        merged.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                       "args": {"sort_index": pid}})
        for event in trace:
            if shift and "ts" in event:
                event = dict(event, ts=round(event["ts"] + latest - end, 3))
            merged.append(event)
    return merged


def merge_files(output: str, inputs: Sequence[str], align: bool = True) -> int:
    """Write the merged trace of inputs (files or FLOCK_TIMELINE paths); the rank count."""
    paths = [p for given in inputs for p in rank_files(given)]
    if not paths:
        raise FileNotFoundError(f"no trace files found for {' '.join(inputs)}")
    merged = merge([read_trace(p) for p in paths], align)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write("[\n" + ",\n".join(json.dumps(e, separators=(",", ":"))
                                        for e in merged) + "\n]\n")
    return len(paths)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flock-timeline", description="Work with flock's per-rank timeline files.")
    commands = parser.add_subparsers(dest="command", required=True)
    merge_parser = commands.add_parser(
        "merge", help="write one trace file with every rank as a process row",
        description="Merge per-rank traces into OUTPUT; open it in https://ui.perfetto.dev "
                    "or chrome://tracing.")
    merge_parser.add_argument("output", help="the merged trace file to write")
    merge_parser.add_argument("inputs", nargs="+", metavar="TRACE",
                              help="per-rank trace files, or the FLOCK_TIMELINE path "
                                   "(t.json stands for t.rank0.json, t.rank1.json, ...)")
    merge_parser.add_argument("--no-align", action="store_true",
                              help="keep each rank's own clock (by default the end of "
                                   "init()'s first collective is lined up)")
    args = parser.parse_args(argv)
    try:
        count = merge_files(args.output, args.inputs, align=not args.no_align)
    except (OSError, ValueError) as exc:
        print(f"flock-timeline: error: {exc}", file=sys.stderr)
        return 1
    print(f"flock-timeline: wrote {args.output} ({count} ranks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
