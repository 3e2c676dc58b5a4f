"""flock-interactive end to end: a real controller and 4 engines (flock ranks) under mpirun.

One cluster serves the module (starting one costs ~10 s on 2 shared cores): a
neighbor_allreduce through it is checked against W^T X computed in numpy, the
example notebook runs on it through a real kernel (%%px and all), a second start
is refused, and stop must leave no process. Every process the cluster starts
inherits IPYTHONDIR, set here to a directory of this test's own, which is how the
test finds them (and ends any survivor, so a failure never leaves processes).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ipp = pytest.importorskip("ipyparallel", reason="flock-interactive needs ipyparallel "
                          "(Debian: python3-ipyparallel, installed by scripts/setup.sh)")

from topology_reference import exponential  # noqa: E402  (tests/python/single)

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "examples" / "notebooks" / "average_consensus.ipynb"
NUM_RANKS = 4
COMMAND_TIMEOUT = 120  # seconds for one flock-interactive command (start waits up to 90)


def interactive(env, *args, timeout=COMMAND_TIMEOUT):
    """Run ``flock-interactive ARGS``; return the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "flockrun.interactive", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def processes_marked_with(ipython_dir):
    """{pid: command line} of the live processes whose environment holds our IPYTHONDIR."""
    marker = f"IPYTHONDIR={ipython_dir}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # exited, waiting to be reaped
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if marker not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                found[int(entry)] = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def kill_leftovers(ipython_dir):
    for pid in processes_marked_with(ipython_dir):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(env, ipython_dir) of a running 4-engine cluster on profile 'flock'."""
    ipython_dir = str(tmp_path_factory.mktemp("ipython"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOCK_")}
    env["IPYTHONDIR"] = ipython_dir
    try:
        began = time.monotonic()
        result = interactive(env, "start", "-np", str(NUM_RANKS), "--timeout", "90")
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"{NUM_RANKS} engines (ranks 0-{NUM_RANKS - 1})" in result.stdout
        print(f"cluster started in {time.monotonic() - began:.1f} s")
        yield env, ipython_dir
    finally:
        interactive(env, "stop")  # a second stop (after the stop test) does nothing
        kill_leftovers(ipython_dir)


@pytest.fixture
def client(cluster):
    _, ipython_dir = cluster
    rc = ipp.Client(profile="flock", ipython_dir=ipython_dir, timeout=30)
    yield rc
    rc.close()


@ipp.interactive  # runs in the engines' namespace, where execute() imported bf
def rank_and_size():
    return bf.rank(), bf.size()  # noqa: F821


@pytest.mark.timeout(120)
def test_neighbor_allreduce_through_the_cluster_is_w_transpose_x(client):
    assert client.ids == list(range(NUM_RANKS))
    view = client[:]
    view.block = True
    view.execute("import torch, flock.torch as bf\nbf.init()\n"
                 "from flock import topology as tu\n"
                 "bf.set_topology(tu.ExponentialGraph(bf.size()))")
    # Engine i is rank i, so rc[i] addresses rank i.
    assert view.apply(rank_and_size) == [(r, NUM_RANKS) for r in range(NUM_RANKS)]
    inputs = np.random.default_rng(7).standard_normal((NUM_RANKS, 5))
    for rank in range(NUM_RANKS):
        client[rank].push({"x_in": inputs[rank]}, block=True)
    view.execute("y = bf.neighbor_allreduce(torch.from_numpy(x_in), name='it.x').numpy()")
    outputs = np.array(view.pull("y"))
    weights = exponential(NUM_RANKS)  # W[i][j]: weight of the edge i -> j
    np.testing.assert_allclose(outputs, weights.T @ inputs, rtol=1e-12, atol=1e-12)
    assert not np.allclose(outputs, inputs)  # the exchange did change something


@pytest.mark.timeout(120)
def test_example_notebook_runs_on_the_cluster(cluster, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    env, _ = cluster
    for name, value in env.items():  # the kernel inherits this process's environment
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(str(NOTEBOOK), as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert not any(cell.outputs for cell in code), "commit the notebook with outputs cleared"
    nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for cell in code for o in cell.outputs)
    assert f"{NUM_RANKS} engines (ranks [0, 1, 2, 3])" in text
    final = float(text.split(" after 30 iterations")[0].rsplit(", ", 1)[1])
    assert final < 1e-10, text  # consensus reached: the distance fell from ~30 to round-off
    rate = float(text.split("(x")[1].split(" per iteration")[0])
    assert abs(rate - 1 / 3) < 0.02, text  # the exponential graph of 4: |lambda_2| = 1/3
    outputs = [o for o in code[-1].outputs if o.output_type == "display_data"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in text
    else:
        assert any("image/png" in o.data for o in outputs), "the plot is missing"


@pytest.mark.timeout(60)
def test_second_start_is_refused_and_the_cluster_keeps_running(cluster, client):
    env, _ = cluster
    result = interactive(env, "start", "-np", "2")
    assert result.returncode == 1
    assert "already running for profile 'flock'" in result.stderr
    assert len(set(client[:].apply_sync(os.getpid))) == NUM_RANKS  # all still answer
    status = interactive(env, "status")
    assert status.returncode == 0 and f"{NUM_RANKS} of {NUM_RANKS} running" in status.stdout


@pytest.mark.timeout(90)
def test_stop_leaves_no_process(cluster):
    env, ipython_dir = cluster
    before = processes_marked_with(ipython_dir)
    # What must be there: the controller (and its schedulers), mpirun, the engines and
    # their nannies. Seeing them here shows the search below would find survivors.
    kinds = ("ipyparallel.controller", "mpirun", "flockrun.interactive_engine",
             "ipyparallel.engine.nanny")
    for kind in kinds:
        assert any(kind in line for line in before.values()), (kind, before)
    assert sum("interactive_engine" in line and "mpirun" not in line
               for line in before.values()) == NUM_RANKS
    result = interactive(env, "stop")
    assert result.returncode == 0, result.stdout + result.stderr
    left = processes_marked_with(ipython_dir)
    assert not left, f"processes left after stop: {left}"
    profile = Path(ipython_dir) / "profile_flock"
    assert not (profile / "security" / "ipcontroller-client.json").exists()
    assert not (profile / "pid" / "flock-interactive.json").exists()
    again = interactive(env, "stop")
    assert again.returncode == 0 and "no cluster is running" in again.stdout


@pytest.mark.timeout(90)
def test_stop_ends_what_a_killed_start_left(tmp_path):
    """start killed (SIGKILL) while it waits for the engines: stop ends everything."""
    ipython_dir = str(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOCK_")}
    env["IPYTHONDIR"] = ipython_dir
    record = tmp_path / "profile_crash" / "pid" / "flock-interactive.json"
    start = subprocess.Popen([sys.executable, "-m", "flockrun.interactive", "start", "-np",
                              "2", "--profile", "crash"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while '"mpirun": null' in _read(record) or not _read(record):
            assert time.monotonic() < deadline and start.poll() is None, "mpirun never started"
            time.sleep(0.1)
        start.kill()  # no clean-up of its own: what it started keeps running
        start.wait(timeout=10)
        assert any("mpirun" in line for line in processes_marked_with(ipython_dir).values())
        result = interactive(env, "stop", "--profile", "crash")
        assert result.returncode == 0, result.stdout + result.stderr
        # An engine's nanny that the killed start never recorded ends by itself once
        # its engine is gone (it watches it): allowed a few seconds, not more.
        deadline = time.monotonic() + 5
        while processes_marked_with(ipython_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_marked_with(ipython_dir)
    finally:
        start.kill()
        start.wait(timeout=10)
        kill_leftovers(ipython_dir)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("failure", ["mpirun fails", "engines never register"])
def test_a_failed_start_ends_what_it_started(failure, tmp_path, monkeypatch, capsys):
    """start's clean-up: an mpirun that exits at once, engines that never register."""
    from flockrun import interactive, interactive_commands
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOCK_")}
    env["IPYTHONDIR"] = str(tmp_path)
    args = ["start", "-np", "2", "--timeout", "6"]
    if failure == "mpirun fails":
        args += ["--mpi-args", "--no-such-mpirun-option"]
        expected = "mpirun (the engines) exited with status"
    else:  # each rank just sleeps: alive, but never an engine
        monkeypatch.setattr(interactive_commands, "engine_command",
                            lambda python, profile: [python, "-c", "import time\n"
                                                     "time.sleep(60)"])
        expected = "registered in time"
    began = time.monotonic()
    try:
        assert interactive.main(args, environ=env) == 1
        assert expected in capsys.readouterr().err
        assert not processes_marked_with(str(tmp_path))
        profile = tmp_path / "profile_flock"
        assert not (profile / "pid" / "flock-interactive.json").exists()
        assert not (profile / "security" / "ipcontroller-client.json").exists()
        assert time.monotonic() - began < 30
    finally:
        kill_leftovers(str(tmp_path))


def _read(path):
    try:
        return path.read_text()
    except OSError:
        return ""
