"""The failure matrix's network case: a host's link taken down under a running job.

The job (tests/python/single/failure_job.py, kind "linkdown") runs over emulated hosts
with FLOCK_STALL_SHUTDOWN_S=2. Once every rank has run each op once, the test takes
one host's link down inside its namespace (`ip link set eth0 down`) and lets the
ranks go on: their ops, global, neighbor and hierarchical, are cut off from the ranks
on the other side. Every rank must get a FlockAbortedError within the limit + 1.5 s
naming a rank beyond the cut and that rank's host; the cut-off rank 0 (the
coordinator) in the second case. Then the link comes back, the ranks end the job
(sys.exit(3): MPI_Abort) and nothing of it may be left running.

The link comes back before the job ends because mpirun cannot end a job whose
host it cannot reach: with the link down for good, MPI_Abort leaves mpirun waiting
for that host's daemon ("abort is already in progress"), see docs/errors.md.
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


def cut_while_running(cluster, host, ranks, directory):
    """Link down once every rank is ready, up again once every rank is done."""
    marker = lambda name: os.path.join(directory, name)  # noqa: E731
    try:
        wait_for([marker("ready.{}".format(r)) for r in range(ranks)], START_TIMEOUT_S,
                 "every rank to start")
        set_link(cluster, host, "down")
        with open(marker("down"), "w") as down:
            down.write(repr(time.time()))
        wait_for([marker("done.{}".format(r)) for r in range(ranks)], OPS_TIMEOUT_S,
                 "every rank's ops to end")
    finally:
        set_link(cluster, host, "up")
        open(marker("end"), "w").close()


def run_job(cluster, hosts, per_host, mode, cut, directory):
    """The job, with host `cut`'s link down meanwhile; its result and what is left of it."""
    env = cluster.environment()
    env.update(FLOCK_STALL_SHUTDOWN_S=str(fr.LIMIT_S), FLOCK_QUIET="1")
    argv = ["flockrun", "-np", str(hosts * per_host), "-H", cluster.host_list(per_host),
            sys.executable, JOB, "linkdown", "-1", mode, ",".join(OPS), str(directory)]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    leader = processes.identify(proc.pid)
    try:
        cut_while_running(cluster, cut, hosts * per_host, directory)
        out, err = proc.communicate(timeout=END_TIMEOUT_S)
    finally:  # a failure or a timeout above: end the job before the cluster goes
        if proc.poll() is None:
            processes.end_processes([processes.session_members(leader)], grace=5.0)
            proc.communicate()
    result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
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
