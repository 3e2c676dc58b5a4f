"""Hangs become errors on time: a stopped rank (SIGSTOP) under FLOCK_STALL_SHUTDOWN_S.

Each case is a job of its own at np 3 with FLOCK_STALL_SHUTDOWN_S=2 and the default
warning period (60 s). One rank stops itself; the others time their next ops, print
what they got, and then kill the stopped rank (SIGKILL, which a stopped process obeys),
so the job ends; no process is left behind (run_session).
"""

import os
import re
import shutil
import sys
import textwrap

import pytest

from jobs import run_session

FLOCKRUN = shutil.which("flockrun")
pytestmark = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not installed on PATH")

LIMIT_S = 2.0

PRELUDE = """
    import os, signal, sys, time, torch
    import flock.torch as bf
    bf.init()
    rank = bf.rank()
    pids = bf.allgather(torch.tensor([os.getpid()])).tolist()
    bf.set_topology(bf.RingGraph(bf.size()))

    def timed(what, call):
        start = time.monotonic()
        try:
            call()
            outcome = "ok"
        except bf.FlockError as error:
            outcome = "{}: {}".format(type(error).__name__, error)
        sys.stdout.write("rank {} {} {:.1f}s {}\\n".format(rank, what, time.monotonic() - start,
                                                         outcome))
        sys.stdout.flush()
"""


def run_case(tmp_path, body):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body))
    env = dict(os.environ, FLOCK_STALL_SHUTDOWN_S=str(LIMIT_S))
    result = run_session([FLOCKRUN, "-np", "3", sys.executable, str(script)], timeout=90,
                         env=env)
    lines = re.findall(r"^rank (\d) (\S+) ([\d.]+)s (.*)$", result.stdout, re.M)
    assert lines, "no timings\n{}\n{}".format(result.stdout, result.stderr)
    return {(int(r), what): (float(t), outcome) for r, what, t, outcome in lines}


def test_a_stopped_rank_fails_its_neighbours_and_the_global_op_on_time(tmp_path):
    got = run_case(tmp_path, """
        if rank == 2:
            os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(0.5)  # rank 2 has stopped by now
        timed("neighbor", lambda: bf.neighbor_allreduce(torch.ones(4), name="n"))
        timed("global", lambda: bf.allreduce(torch.ones(4), name="g"))
        if rank == 0:
            os.kill(pids[2], signal.SIGKILL)
    """)
    for rank in (0, 1):  # both are rank 2's neighbours on the ring of 3
        for what in ("neighbor", "global"):
            seconds, outcome = got[(rank, what)]
            assert outcome.startswith("FlockAbortedError"), (rank, what, outcome)
            assert LIMIT_S - 0.5 <= seconds <= LIMIT_S + 1.5, (rank, what, seconds)
    assert "ranks 2 never submitted it" in got[(0, "global")][1]


def test_ranks_whose_coordinator_stopped_fail_global_ops_and_keep_neighbor_ops(tmp_path):
    got = run_case(tmp_path, """
        if rank == 0:
            os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(0.5)  # rank 0 has stopped by now
        timed("global", lambda: bf.allreduce(torch.ones(4), name="g"))
        timed("again", lambda: bf.allreduce(torch.ones(4), name="g2"))
        other = 3 - rank  # ranks 1 and 2 average with each other, without rank 0
        timed("pair", lambda: bf.pair_gossip(torch.ones(4) * rank, other, name="p"))
        if rank == 1:
            os.kill(pids[0], signal.SIGKILL)
    """)
    for rank in (1, 2):
        seconds, outcome = got[(rank, "global")]
        assert outcome.startswith("FlockAbortedError") and "no answer from rank 0" in outcome
        assert seconds <= LIMIT_S + 1.5 + 1.5, seconds
        seconds, outcome = got[(rank, "again")]
        assert "no answer from rank 0" in outcome and seconds < 0.5, (seconds, outcome)
        assert got[(rank, "pair")][1] == "ok"
