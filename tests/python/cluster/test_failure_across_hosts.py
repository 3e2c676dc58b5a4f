"""The failure matrix's network case: a host's link taken down under a running job.

The job (tests/python/single/failure_job.py, kind "linkdown") runs over emulated hosts
with FLOCK_STALL_SHUTDOWN_S=2. Once every rank has run each op once, the test takes
one host's link down inside its namespace (`ip link set eth0 down`) and lets the
ranks go on: their ops, global, neighbor and hierarchical, are cut off from the ranks
on the other side. Every rank must get a FlockAbortedError within the limit + 1.5 s
naming a rank beyond the cut and that rank's host; the cut-off rank 0 (the
coordinator) in the second case. Then the link comes back, the ranks end the job
(sys.exit(3): MPI_Abort) and nothing of it may be left running.

In the last case the link stays down while the ranks end the job (a host lost for
good): mpirun cannot reach that host's daemon and would wait forever ("abort is
already in progress"), so flockrun stops it (launcher/flockrun/run.py,
_AbortWatchdog) and exits with the ranks' status; once the link is back, the cut-off
host's daemon loses mpirun and ends its ranks, and nothing of the job may be left.
Skipped, with the reason, where network namespaces cannot be made.
"""

import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SINGLE = os.path.join(ROOT, "tests", "python", "single")
sys.path.insert(0, os.path.join(ROOT, "tools", "cluster"))
sys.path.insert(0, SINGLE)

import cluster as emu  # noqa: E402
import failure_report as fr  # noqa: E402
from flockrun import processes  # noqa: E402

JOB = os.path.join(SINGLE, "failure_job.py")
OPS = ("allreduce", "neighbor_allreduce", "hierarchical_neighbor_allreduce")
START_TIMEOUT_S = 90  # four ranks importing torch on two shared cores
OPS_TIMEOUT_S = 30
END_TIMEOUT_S = 60
# A host lost for good: flockrun's grace after the abort, its stopping of mpirun,
# and the drain of the output.
LOST_HOST_END_S = 15.0 + 8.0
# How long the cut-off host's daemon may take, once the link is back, to learn that
# mpirun is gone and end its ranks (TCP retransmission back-off: measured 5-15 s).
LOST_HOST_GONE_S = 60.0

_reason = emu.namespaces_supported()
pytestmark = pytest.mark.skipif(_reason is not None,
                                reason="no emulated cluster here: {}".format(_reason))


@pytest.fixture(autouse=True)
def no_cluster_before_or_after():
    if emu.in_use():
        pytest.fail("another process (a benchmark?) is using the emulated cluster; "
                    "run the tests when it is done")
    emu.tear_down()  # what a killed run left behind
    yield
    left = emu.leftovers()
    emu.tear_down()
    assert not left, "the test left {} behind".format(left)


def wait_for(paths, timeout, what):
    deadline = time.monotonic() + timeout
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for {}".format(what))
        time.sleep(0.05)


def set_link(cluster, host, state):
    subprocess.run(["ip", "-n", cluster.namespace(host), "link", "set", "eth0", state],
                   check=state == "down", timeout=10)


def cut_while_running(cluster, host, ranks, directory, proc, for_good):
    """Link down once every rank is ready, up again once every rank is done (for
    good: once the job has ended without it). When the job ended, for good."""
    marker = lambda name: os.path.join(directory, name)  # noqa: E731
    ended = None
    try:
        wait_for([marker("ready.{}".format(r)) for r in range(ranks)], START_TIMEOUT_S,
                 "every rank to start")
        set_link(cluster, host, "down")
        with open(marker("down"), "w") as down:
            down.write(repr(time.time()))
        wait_for([marker("done.{}".format(r)) for r in range(ranks)], OPS_TIMEOUT_S,
                 "every rank's ops to end")
        if for_good:
            ending = time.monotonic()
            open(marker("end"), "w").close()
            proc.wait(timeout=LOST_HOST_END_S)
            ended = time.monotonic() - ending
    finally:
        set_link(cluster, host, "up")
        open(marker("end"), "w").close()
    return ended


def run_job(cluster, hosts, per_host, mode, cut, directory, for_good=False):
    """The job, with host `cut`'s link down meanwhile; its result, what is left of it
    and, for good, how long it took to end once the ranks ended it."""
    env = cluster.environment()
    env.update(FLOCK_STALL_SHUTDOWN_S=str(fr.LIMIT_S), FLOCK_QUIET="1")
    argv = ["flockrun", "-np", str(hosts * per_host), "-H", cluster.host_list(per_host),
            sys.executable, JOB, "linkdown", "-1", mode, ",".join(OPS), str(directory)]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    leader = processes.identify(proc.pid)
    try:
        ended = cut_while_running(cluster, cut, hosts * per_host, directory, proc, for_good)
        out, err = proc.communicate(timeout=END_TIMEOUT_S)
    finally:  # a failure or a timeout above: end the job before the cluster goes
        if proc.poll() is None:
            processes.end_processes([processes.session_members(leader)], grace=5.0)
            proc.communicate()
    result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    result.ended = ended
    return result, processes.session_members(leader)


@pytest.mark.parametrize("hosts,per_host,mode,cut", [(2, 2, "blocking", 2),
                                                     (3, 1, "nonblocking", 1)])
def test_every_rank_names_a_rank_beyond_a_cut_link(hosts, per_host, mode, cut, tmp_path):
    with emu.EmulatedCluster(hosts=hosts) as cluster:
        result, leftovers = run_job(cluster, hosts, per_host, mode, cut, tmp_path)
    report = fr.parse(result.stdout)
    why = fr.describe(result, report)
    assert len(report.pids) == hosts * per_host, why
    cut_off = {r for r, h in report.hosts.items() if h == emu.host_name(cut)}
    for rank in report.pids:
        beyond = cut_off if rank not in cut_off else set(report.pids) - cut_off
        for op in OPS:
            got = report.ops[(rank, op)]
            what = "rank {} {}: {}\n{}".format(rank, op, got.outcome, why)
            assert got.outcome.startswith("FlockAbortedError: "), what
            assert any(fr.names_rank_and_host(got.outcome, r, report.hosts[r])
                       for r in beyond), what
            assert report.seconds(rank, op) <= fr.DEADLINE_S, what
    assert result.returncode == 3, why  # the ranks ended it, after the link came back
    fr.assert_nothing_left(report, leftovers)


def test_a_host_lost_for_good_still_lets_the_job_end(tmp_path):
    with emu.EmulatedCluster(hosts=2) as cluster:
        result, leftovers = run_job(cluster, 2, 2, "blocking", 2, tmp_path, for_good=True)
        report = fr.parse(result.stdout)
        why = fr.describe(result, report)
        assert result.ended is not None and result.ended <= LOST_HOST_END_S, why
        assert result.returncode == 3, why  # the ranks' sys.exit(3), not mpirun's crash
        assert "mpirun has not ended the job" in result.stderr, why
        started = {p for pair in report.pids.values() for p in pair} | set(leftovers)
        left = processes.wait_gone(started, timeout=LOST_HOST_GONE_S)
    if left:
        processes.end_processes([left], grace=2.0)
    assert not left, "processes of the job still running {} s after the link came back: " \
        "{}\n{}".format(LOST_HOST_GONE_S, left, why)

