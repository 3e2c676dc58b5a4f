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
    if emu.in_use():
        pytest.fail("another process (a benchmark?) is using the emulated cluster; "
                    "run the tests when it is done")
    emu.tear_down()  # what a killed run or `tools/cluster up` left behind
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
            assert sorted(emu.leftovers()) == sorted([
                "flock-h1", "flock-h2", "link flock-br", "link flock-h1", "link flock-h2",
                "/etc/netns/flock-h1", "/etc/netns/flock-h2"])
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


def test_a_second_cluster_is_refused_while_one_is_in_use():
    with emu.EmulatedCluster(hosts=1):
        assert emu.in_use()
        with pytest.raises(emu.ClusterError, match="in use by a running process"):
            emu.EmulatedCluster(hosts=1).up()
        down = subprocess.run([sys.executable, TOOL, "down"], capture_output=True, text=True)
        assert down.returncode == 2 and "uses the emulated cluster" in down.stderr
        assert len(emu.leftovers()) > 0  # `down` left it alone
    assert not emu.in_use()


def test_cli_up_leaves_a_cluster_that_down_removes():
    up = subprocess.run([sys.executable, TOOL, "up", "--hosts", "2"], capture_output=True,
                        text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    assert "export FLOCK_RSH_AGENT=" in up.stdout
    assert "flock-h2" in emu.leftovers() and not emu.in_use()
    with pytest.raises(emu.ClusterError, match="already up.*tools/cluster down"):
        emu.EmulatedCluster(hosts=1).up()
    down = subprocess.run([sys.executable, TOOL, "down"], capture_output=True, text=True)
    assert down.returncode == 0, down.stderr
    assert emu.leftovers() == []


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


_RATE_SERVER = """exec python3 -c 'import socket, time
s = socket.create_server(("10.77.0.12", 5001))
print("ready", flush=True)
c, _ = s.accept()
n, first = 0, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    first = first or time.monotonic()
    n += len(b)
print(n, time.monotonic() - first)'"""


def test_link_rate_is_enforced():
    # Timed by the receiver from its first byte to the last, so start-up costs
    # do not count: 4 MiB through a 64 Mbit/s link take ~0.5 s; unshaped veth
    # moves them in milliseconds.
    payload, rate_bits = 4 * MIB, 64e6
    with emu.EmulatedCluster(hosts=2, rate="64mbit"):
        server = subprocess.Popen([emu.AGENT, "h2", _RATE_SERVER], stdout=subprocess.PIPE,
                                  text=True)
        assert server.stdout.readline().strip() == "ready"
        sent = _in_host("h1", "exec python3 -c 'import socket\n"
                        "c=socket.create_connection((\"10.77.0.12\",5001))\n"
                        "c.sendall(bytes({}))\nc.close()'".format(payload))
        received, _ = server.communicate(timeout=60)
    assert sent.returncode == 0, sent.stderr
    count, seconds = received.split()
    assert int(count) == payload
    ideal = (payload - emu.burst_bytes("64mbit")) * 8 / rate_bits
    assert 0.9 * ideal <= float(seconds) <= 10 * ideal, (
        "{} bytes in {}s over a 64 Mbit/s link (ideal {:.2f}s)".format(payload, seconds, ideal))


# ---- flock on the cluster

@pytest.mark.parametrize("hosts,per_host,placement", [(2, 2, "-H"), (3, 2, "--hostfile")])
def test_flock_ops_across_hosts(hosts, per_host, placement, tmp_path):
    with emu.EmulatedCluster(hosts=hosts) as cluster:
        before = [cluster.link_bytes(h) for h in range(1, hosts + 1)]
        env = cluster.environment()
        env["CLUSTER_RANKS_PER_HOST"] = str(per_host)
        if placement == "-H":
            where = ["-H", cluster.host_list(per_host)]
        else:
            hostfile = tmp_path / "hosts.txt"
            hostfile.write_text("".join("h{} slots={}\n".format(h, per_host)
                                        for h in range(1, hosts + 1)))
            where = ["--hostfile", str(hostfile)]
        command = ["flockrun", "-np", str(hosts * per_host)] + where + [
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
