"""flock-timeline merge: one trace for all ranks, on made-up and on real traces."""

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from flock.timeline_merge import first_span_end, merge, rank_files, read_trace
from jobs import run_session


def trace(rank, start):
    """A rank's trace whose init() collective ends at ``start + 10`` on its own clock."""
    return [
        {"name": "process_name", "ph": "M", "pid": rank, "args": {"name": f"rank {rank}"}},
        {"name": "thread_name", "ph": "M", "pid": rank, "tid": 1,
         "args": {"name": "flock.set_topology"}},
        {"name": "allgather", "ph": "B", "ts": start, "pid": rank, "tid": 1},
        {"name": "COMMUNICATE", "ph": "B", "ts": start + 5, "pid": rank, "tid": 1},
        {"ph": "E", "ts": start + 9, "pid": rank, "tid": 1},
        {"ph": "E", "ts": start + 10, "pid": rank, "tid": 1},
        {"name": "thread_name", "ph": "M", "pid": rank, "tid": 2, "args": {"name": "grad"}},
        {"name": "allreduce", "ph": "B", "ts": start + 20, "pid": rank, "tid": 2},
        {"ph": "E", "ts": start + 30, "pid": rank, "tid": 2},
    ]


def test_merge_lines_up_the_end_of_inits_collective():
    merged = merge([trace(0, 100.0), trace(1, 40.0)])
    by_rank = {r: [e for e in merged if e.get("pid") == r] for r in (0, 1)}
    assert first_span_end(by_rank[0], "flock.set_topology") == 110.0
    assert first_span_end(by_rank[1], "flock.set_topology") == 110.0  # shifted by 60
    assert [e["ts"] for e in by_rank[1] if "ts" in e] == [100, 105, 109, 110, 120, 130]
    assert {"name": "process_sort_index", "ph": "M", "pid": 1,
            "args": {"sort_index": 1}} in merged
    assert len(merged) == 2 * (len(trace(0, 0)) + 1)


def test_no_align_keeps_each_clock_and_a_rank_may_not_come_twice():
    merged = merge([trace(0, 100.0), trace(1, 40.0)], align=False)
    assert [e["ts"] for e in merged if e.get("pid") == 1 and "ts" in e][0] == 40.0
    with pytest.raises(ValueError, match="same rank"):
        merge([trace(0, 1.0), trace(0, 2.0)])


def test_an_unfinished_file_is_read_and_rank_files_are_found_in_rank_order(tmp_path):
    for rank in (0, 1, 10, 2):
        text = json.dumps(trace(rank, 0.0), indent=0)
        (tmp_path / f"t.rank{rank}.json").write_text(text[:-1].rstrip() + ",\n")  # no "]"
    (tmp_path / "t.rankx.json").write_text("[]")
    paths = rank_files(str(tmp_path / "t.json"))
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "t.rank0.json", "t.rank1.json", "t.rank2.json", "t.rank10.json"]
    assert read_trace(paths[3]) == trace(10, 0.0)
    whole = "[\n" + ",\n".join(json.dumps(e) for e in trace(2, 0.0))  # one event a line
    cut = whole[:whole.rindex("{") + 12]  # a rank died in the middle of its last event
    (tmp_path / "cut.json").write_text(cut)
    assert read_trace(str(tmp_path / "cut.json")) == trace(2, 0.0)[:-1]
    (tmp_path / "u.0.json").write_text("[]")
    assert rank_files(str(tmp_path / "u.{rank}.json")) == [str(tmp_path / "u.0.json")]


@pytest.mark.skipif(shutil.which("flockrun") is None, reason="flockrun is not installed")
def test_merge_of_a_real_two_rank_job(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import torch, flock.torch as bf
        bf.init()
        with bf.timeline_context("step", "FORWARD"):
            for i in range(3):
                bf.allreduce(torch.ones(8), name="grad")
    """))
    job = run_session(["flockrun", "-np", "2", "--timeline-filename", "t.json",
                       sys.executable, str(script)], cwd=tmp_path, timeout=120)
    assert job.returncode == 0, job.stderr
    tool = subprocess.run([sys.executable, "-m", "flock.timeline_merge", "merge", "all.json",
                           "t.json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert tool.returncode == 0, tool.stderr
    assert tool.stdout == "flock-timeline: wrote all.json (2 ranks)\n"
    events = json.loads((tmp_path / "all.json").read_text())
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}
    for rank in (0, 1):
        own = [e for e in events if e.get("pid") == rank]
        assert set(rows(own)) == {"flock.set_topology", "step", "grad"}
        assert sum(1 for e in own if e.get("name") == "allreduce") == 3
    ends = {first_span_end([e for e in events if e.get("pid") == r], "flock.set_topology")
            for r in (0, 1)}
    assert len(ends) == 1


def rows(events):
    return [e["args"]["name"] for e in events if e.get("name") == "thread_name"]
