"""The failure matrix (issue 22, item 2): one rank fails, and every other rank whose op
needs it gets a flock error on time, naming the failed rank and its host, and the job
leaves no process behind.

Each case is a real MPI job (failure_job.py under flockrun) with
FLOCK_STALL_SHUTDOWN_S=2 and the default warning period (60 s). Right after a start
barrier one rank (the victim) fails; the survivors' ops are then in flight:

  kill      SIGKILL       mpirun sees the death and SIGTERMs the survivors: flock
                          raises FlockAbortedError "the job is being terminated" where
                          each one is (measured ~1.0 s); flockrun names the rank and host
  os_exit   os._exit(0)   the same ("exited without finalizing MPI")
  stop      SIGSTOP       ops needing it stall: FlockAbortedError after the limit (2.0-2.3 s;
                          the hierarchical op's later steps 0.5 s more per step; a
                          stopped rank 0: "no answer from rank 0" on the others after
                          2.75-3.0 s, and at once for their later global ops)
  shutdown  bf.shutdown() ops needing it fail at once, < 0.05 s ("flock was shut down on
                          rank V", "rank V shut down before this call")
  exit      interpreter exit without shutdown(): the same (flock's atexit shuts down)
  stop_exit SIGSTOP, never resumed, and the survivors catch their errors and exit
                          normally: the ops fail as for stop; the survivors' shutdown
                          cannot complete without the stopped rank, so once the others
                          have shut down it waits FLOCK_STALL_SHUTDOWN_S for a rank seen
                          stalling, then ends the job (non-zero, naming rank and host)

Nonblocking handles are synchronized in order, so a handle's time is when it was read:
an op that failed while an earlier one was still waiting reads as late as that one.
The whole matrix takes about 2.5 minutes on two cores.

Ops: allreduce, broadcast, allgather (global: every survivor needs the victim),
neighbor_allreduce on a ring of ranks and hierarchical_neighbor_allreduce on a ring of
machines (FLOCK_LOCAL_SIZE fakes the machines): only the survivors that need the victim
fail — directly, or for the hierarchical op through a peer on the victim's machine — and
the others must get the right result. Blocking and nonblocking (every op submitted, then
synchronized). A covering design, not the full product: every failure x op class x mode
appears, np 2-4 and the victim (rank 0, the coordinator of global ops, or another) spread
over the cases, several ops timed per job where the failure lets the survivors go on
(kill and os_exit end the job at the first error: one op each). A host's link taken down
is tests/python/cluster/test_failure_across_hosts.py. docs/errors.md has the table of
what the user sees.
"""

import os
import shutil
import sys
import time
from collections import namedtuple
from pathlib import Path

import pytest

import failure_report as fr
from jobs import run_session

FLOCKRUN = shutil.which("flockrun")
pytestmark = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not installed on PATH")

JOB = str(Path(__file__).with_name("failure_job.py"))
JOB_TIMEOUT_S = 60

AR, BC, AG = "allreduce", "broadcast", "allgather"
NA, HNA = "neighbor_allreduce", "hierarchical_neighbor_allreduce"
GLOBAL = (AR, BC, AG)

# local: FLOCK_LOCAL_SIZE, ranks per (fake) machine of the hierarchical op.
Case = namedtuple("Case", "kind mode np victim local ops")
CASES = [
    Case("stop", "blocking", 3, 2, 1, (AR, NA, HNA)),
    Case("stop", "blocking", 4, 0, 2, (AR, BC, NA, HNA)),
    Case("stop", "nonblocking", 4, 3, 2, (AR, BC, AG, NA, HNA)),
    Case("stop", "nonblocking", 2, 0, 1, (AR, NA, HNA)),
    # Global stall seen by rank 0; rank 0 lost; neighbor stalls only, where rank 0
    # is not the victim's neighbour (the others tell it at their shutdown) or is the
    # victim (its neighbours end the job).
    Case("stop_exit", "blocking", 3, 1, 1, (AR, NA)),
    Case("stop_exit", "nonblocking", 4, 0, 2, (AR, NA, HNA)),
    Case("stop_exit", "blocking", 4, 2, 1, (NA,)),
    Case("stop_exit", "nonblocking", 3, 0, 1, (NA, HNA)),
    Case("shutdown", "blocking", 2, 0, 1, (AR, NA, HNA)),
    Case("shutdown", "nonblocking", 3, 1, 1, (AR, BC, AG, NA, HNA)),
    Case("exit", "blocking", 4, 1, 2, (AR, AG, NA, HNA)),
    Case("exit", "nonblocking", 3, 0, 1, (AR, NA, HNA)),
    # The job ends at the first error: the first op listed is the one timed.
    Case("kill", "blocking", 2, 1, 1, (AR,)),
    Case("kill", "nonblocking", 3, 0, 1, (AR, NA, HNA)),
    Case("kill", "blocking", 4, 0, 2, (NA,)),
    Case("kill", "nonblocking", 2, 0, 1, (NA, HNA, AR)),
    Case("kill", "blocking", 3, 2, 1, (HNA,)),
    Case("kill", "nonblocking", 4, 3, 2, (HNA, AR, NA)),
    Case("os_exit", "blocking", 4, 2, 2, (AR,)),
    Case("os_exit", "nonblocking", 2, 1, 1, (AR, NA, HNA)),
    Case("os_exit", "blocking", 3, 0, 1, (NA,)),
    Case("os_exit", "nonblocking", 4, 1, 2, (NA, HNA, AR)),
    Case("os_exit", "blocking", 2, 0, 1, (HNA,)),
    Case("os_exit", "nonblocking", 3, 1, 1, (HNA, AR, NA)),
]


def case_id(case):
    return "{}-{}-np{}-victim{}".format(case.kind, case.mode, case.np, case.victim)


def ring_distance(a, b, n):
    return min((a - b) % n, (b - a) % n)


def needs_victim(case, rank, op):
    """Does rank's op need the victim, directly or through a peer that needs it?"""
    if op in GLOBAL:
        return True
    if op == NA:
        return ring_distance(rank, case.victim, case.np) == 1
    # Hierarchical: a rank of the victim's machine meets it in the local steps; a rank
    # of a neighbouring machine waits for a slice its machine never finishes.
    machines = case.np // case.local
    mine, theirs = rank // case.local, case.victim // case.local
    return mine == theirs or ring_distance(mine, theirs, machines) == 1


# stop_exit: from the last survivor's exit to the job's end (the limit, then MPI_Abort
# and mpirun ending every rank).
ENDS_JOB_S = fr.LIMIT_S + 3.0


def run_case(case, tmp_path):
    env = {"FLOCK_STALL_SHUTDOWN_S": str(fr.LIMIT_S), "FLOCK_LOCAL_SIZE": str(case.local)}
    argv = [FLOCKRUN, "-np", str(case.np), sys.executable, JOB, case.kind, str(case.victim),
            case.mode, ",".join(case.ops), str(tmp_path)]
    result = run_session(argv, timeout=JOB_TIMEOUT_S, env=dict(os.environ, **env))
    result.ended = time.time()
    report = fr.parse(result.stdout)
    assert report.failed_at is not None and len(report.pids) == case.np, fr.describe(result,
                                                                                      report)
    return result, report


def check_survivor_op(case, report, rank, op, why):
    """One surviving rank's outcome of one op."""
    got = report.ops[(rank, op)]
    if not needs_victim(case, rank, op):
        assert got.outcome == "ok", why
        return
    host = report.hosts[case.victim]
    if case.kind in ("kill", "os_exit"):
        assert got.outcome.startswith("FlockAbortedError: the job is being terminated"), why
    else:
        assert got.outcome.startswith("FlockAbortedError: "), why
        assert fr.names_rank_and_host(got.outcome, case.victim, host), why
    limit = fr.PROMPT_S if case.kind in ("shutdown", "exit") else fr.DEADLINE_S
    assert report.seconds(rank, op) <= limit, why


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_survivor_learns_of_the_failure_on_time(case, tmp_path):
    result, report = run_case(case, tmp_path)
    why = fr.describe(result, report)
    survivors = [r for r in range(case.np) if r != case.victim]
    ends_job = case.kind in ("kill", "os_exit")
    for rank in survivors:
        ops = case.ops if not ends_job else [op for op in case.ops if (rank, op) in report.ops]
        for op in ops:
            check_survivor_op(case, report, rank, op, "rank {} {}\n{}".format(rank, op, why))
        if ends_job:  # wherever the survivor was, mpirun's SIGTERM reached it on time
            assert rank in report.terminated, why
            assert report.terminated[rank] - report.failed_at <= fr.DEADLINE_S, why
    if ends_job:
        assert result.returncode != 0, why
        assert fr.names_rank_and_host(result.stderr + result.stdout, case.victim,
                                      report.hosts[case.victim]), why
    elif case.kind in ("shutdown", "exit"):
        assert result.returncode == 0, why  # every rank shut down: a normal end
    elif case.kind == "stop_exit":
        assert result.returncode != 0, why
        assert sorted(report.exiting) == survivors, why
        assert result.ended - max(report.exiting.values()) <= ENDS_JOB_S, why
        assert fr.names_rank_and_host(result.stderr + result.stdout, case.victim,
                                      report.hosts[case.victim]), why
    fr.assert_nothing_left(report, result.leftovers)
