"""flock across emulated hosts (network namespaces) and the harness itself.

Skipped, with the reason, where this machine does not let us create
network namespaces (not root, or a sandbox without them). Every test tears
down what it built; the module fixture also removes a cluster an earlier,
killed run left behind.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TOOL = os.path.join(ROOT, "tools", "cluster")
sys.path.insert(0, TOOL)

import cluster as emu  # noqa: E402

JOB_TIMEOUT_S = 300
MIB = 1 << 20

_reason = emu.namespaces_supported()
pytestmark = pytest.mark.skipif(_reason is not None,
                                reason="no emulated cluster here: {}".format(_reason))


@pytest.fixture(autouse=True)
def no_cluster_before_or_after():
    emu.tear_down()
    yield
    left = emu.leftovers()
    emu.tear_down()
    assert not left, "the test left {} behind".format(left)


def _in_host(cluster_host, shell_line, timeout=60):
    """Run a shell line on an emulated host through the launch agent."""
    return subprocess.run([emu.AGENT, cluster_host, shell_line], capture_output=True,
                          text=True, timeout=timeout)


# ---- the harness

def test_hosts_have_their_names_addresses_and_only_the_test_subnet():
    with emu.EmulatedCluster(hosts=2):
        out = _in_host("h2", "hostname; getent hosts h1; ip -4 -o addr show eth0; ip route")
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "h2"
        assert lines[1].split() == ["10.77.0.11", "h1"]
        assert "10.77.0.12/24" in lines[2]
        assert "default" not in out.stdout  # nowhere to go but the test subnet
        # A refused connection proves h2 answered (nothing listens on port 9).
        probe = _in_host("h1", "python3 -c 'import socket\n"
                         "try: socket.create_connection((\"10.77.0.12\", 9), timeout=5)\n"
                         "except ConnectionRefusedError: print(\"refused\")'")
        assert probe.stdout.strip() == "refused", "h1 cannot reach h2: " + probe.stderr


def test_cluster_is_removed_when_the_block_fails():
    with pytest.raises(RuntimeError, match="boom"):
        with emu.EmulatedCluster(hosts=2, rate="1gbit"):
            assert len(emu.leftovers()) == 3  # bridge + 2 namespaces
            raise RuntimeError("boom")
    assert emu.leftovers() == []


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_cli_run_tears_down_when_interrupted(stop):
    proc = subprocess.Popen([sys.executable, TOOL, "run", "--hosts", "1", "--", "sleep", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not emu.leftovers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert emu.leftovers(), "the cluster never came up"
    time.sleep(0.3)  # let it reach the command
    proc.send_signal(stop)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    assert emu.leftovers() == []


def test_a_second_cluster_is_refused_while_one_is_up():
    with emu.EmulatedCluster(hosts=1):
        with pytest.raises(emu.ClusterError, match="already up.*tools/cluster down"):
            emu.EmulatedCluster(hosts=1).up()


def test_bad_requests_are_refused_before_anything_is_built():
    with pytest.raises(emu.ClusterError, match="hosts must be"):
        emu.EmulatedCluster(hosts=0)
    with pytest.raises(emu.ClusterError, match="bad link rate 'fast'"):
        emu.EmulatedCluster(hosts=1, rate="fast")
    assert emu.leftovers() == []


def test_agent_names_a_host_that_does_not_exist():
    with emu.EmulatedCluster(hosts=1):
        out = _in_host("h7", "true")
    assert out.returncode == 255
    assert "no emulated host 'h7'" in out.stderr


def test_link_rate_is_enforced():
    # 4 MiB through a 64 Mbit/s link takes >= 0.52 s; unshaped veth is far faster.
    payload, rate_bits = 4 * MIB, 64e6
    with emu.EmulatedCluster(hosts=2, rate="64mbit"):
        server = subprocess.Popen([emu.AGENT, "h2", "exec python3 -c 'import socket\n"
                                   "s=socket.create_server((\"10.77.0.12\",5001))\n"
                                   "c,_=s.accept()\n"
                                   "n=0\n"
                                   "while True:\n"
                                   " b=c.recv(1<<20)\n"
                                   " if not b: break\n"
                                   " n+=len(b)\n"
                                   "print(n)'"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        start = time.monotonic()
        sent = _in_host("h1", "exec python3 -c 'import socket\n"
                        "c=socket.create_connection((\"10.77.0.12\",5001))\n"
                        "c.sendall(bytes({}))\nc.close()'".format(payload))
        received, _ = server.communicate(timeout=60)
        elapsed = time.monotonic() - start
    assert sent.returncode == 0, sent.stderr
    assert int(received) == payload
    ideal = payload * 8 / rate_bits
    assert elapsed >= 0.9 * ideal, "{} bytes in {:.2f}s: faster than the 64 Mbit/s link".format(
        payload, elapsed)


# ---- flock on the cluster

@pytest.mark.parametrize("hosts,per_host", [(2, 2), (3, 2)])
def test_flock_ops_across_hosts(hosts, per_host, tmp_path):
    with emu.EmulatedCluster(hosts=hosts) as cluster:
        before = [cluster.link_bytes(h) for h in range(1, hosts + 1)]
        env = cluster.environment()
        env["CLUSTER_RANKS_PER_HOST"] = str(per_host)
        command = ["flockrun", "-np", str(hosts * per_host), "-H", cluster.host_list(per_host),
                   "-x", "CLUSTER_RANKS_PER_HOST", sys.executable,
                   os.path.join(ROOT, "tests", "python", "mpi_pytest.py"), str(tmp_path),
                   os.path.join(ROOT, "tests", "python", "cluster", "on_hosts.py"), "-q"]
        try:
            job = subprocess.run(command, env=env, capture_output=True, text=True,
                                 timeout=JOB_TIMEOUT_S, cwd=ROOT)
        except subprocess.TimeoutExpired as exc:
            pytest.fail("the job on {} hosts hung for {} s:\n{}".format(
                hosts, JOB_TIMEOUT_S, exc.stdout))
        after = [cluster.link_bytes(h) for h in range(1, hosts + 1)]
    assert job.returncode == 0, "job failed:\n{}\n{}".format(job.stdout[-6000:],
                                                             job.stderr[-6000:])
    assert "passed" in job.stdout and "failed" not in job.stdout
    for h in range(hosts):
        sent = after[h]["sent"] - before[h]["sent"]
        received = after[h]["received"] - before[h]["received"]
        # The 4 MiB float32 and 8 MiB float64 exchanges must cross every host's
        # link: at least one machine mean (8 MiB) leaves and arrives.
        assert sent >= 8 * MIB and received >= 8 * MIB, (
            "host h{}: only {} bytes sent, {} received over its link".format(
                h + 1, sent, received))


MPI_TESTS = os.path.join(ROOT, "build", "tests", "cpp", "flock_mpi_tests")


@pytest.mark.skipif(not os.path.exists(MPI_TESTS), reason="C++ tests not built (scripts/setup.sh)")
def test_cpp_mpi_tests_across_hosts():
    # The engine, transport and neighbor C++ tests, with TCP between the hosts;
    # among them the check that on_this_host() matches the launcher's placement.
    with emu.EmulatedCluster(hosts=2) as cluster:
        try:
            job = subprocess.run(["flockrun", "-np", "4", "-H", cluster.host_list(2), MPI_TESTS],
                                 env=cluster.environment(), capture_output=True, text=True,
                                 timeout=JOB_TIMEOUT_S, cwd=ROOT)
        except subprocess.TimeoutExpired as exc:
            pytest.fail("the C++ MPI tests hung on 2 hosts:\n{}".format(exc.stdout))
    assert job.returncode == 0, job.stdout[-6000:] + job.stderr[-3000:]
    assert "PASSED" in job.stdout
