"""flock-interactive with engines on two emulated hosts (network namespaces).

What a single machine cannot show: the engines on other hosts get the
controller's connection details through mpirun's -x (no shared file), dial
the controller at --controller-ip, run flock ops over TCP between hosts, and
stop ends them through mpirun. Skipped where namespaces cannot be made.
"""

import os
import subprocess
import sys

import pytest

ipp = pytest.importorskip("ipyparallel", reason="flock-interactive needs ipyparallel "
                          "(Debian: python3-ipyparallel, installed by scripts/setup.sh)")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "cluster"))

import cluster as emu  # noqa: E402

_reason = emu.namespaces_supported()
pytestmark = pytest.mark.skipif(_reason is not None,
                                reason="no emulated cluster here: {}".format(_reason))

BRIDGE_ADDRESS = "10.77.0.1"  # the root namespace's address on the test subnet


def interactive(env, *args):
    return subprocess.run([sys.executable, "-m", "flockrun.interactive", *args], env=env,
                          capture_output=True, text=True, timeout=150)


def engine_processes():
    """Pids of live engine processes on this machine (any namespace)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if b"flockrun.interactive_engine" in cmdline.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.timeout(240)
def test_engines_on_two_hosts(tmp_path):
    if emu.in_use():
        pytest.fail("another process is using the emulated cluster; run the tests when it is done")
    with emu.EmulatedCluster(hosts=2) as cluster:
        env = cluster.environment()
        env["IPYTHONDIR"] = str(tmp_path)
        try:
            started = interactive(env, "start", "-np", "4", "-H", cluster.host_list(2),
                                  "--controller-ip", BRIDGE_ADDRESS, "--timeout", "120")
            assert started.returncode == 0, started.stdout + started.stderr
            assert "on h1, h2 registered" in started.stdout
            rc = ipp.Client(profile="flock", ipython_dir=str(tmp_path), timeout=30)
            try:
                view = rc[:]
                view.execute("import socket, torch, flock.torch as bf\nbf.init()\n"
                             "host = socket.gethostname()\n"
                             "y = bf.neighbor_allreduce(torch.tensor([float(bf.rank())]))",
                             block=True)
                assert view.pull("host", block=True) == ["h1", "h1", "h2", "h2"]
                # Exponential graph of 4: rank r averages itself with r-1 and r-2.
                assert [t.item() for t in view.pull("y", block=True)] == pytest.approx(
                    [5 / 3, 4 / 3, 1.0, 2.0])
            finally:
                rc.close()
            stopped = interactive(env, "stop")
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            assert not engine_processes()
        finally:
            interactive(env, "stop")
