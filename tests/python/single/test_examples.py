"""The Python examples run end to end under flockrun (smoke tests at small sizes) and print
what their users read, in Bluefog's formats where they mirror Bluefog's examples: the
digits summary, the benchmark's Iter/Total lines, the consensus error and its rate, the
optimization methods' errors and gradient norms, MNIST-style and ResNet training lines.
Window-op modes (push-sum consensus, the win_put optimizer) run asynchronously; and the
examples run with tqdm and matplotlib hidden (optional extras stay optional)."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from jobs import run_session

FLOCKRUN = shutil.which("flockrun")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python")
pytestmark = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not installed on PATH")


def run_example(np, script, *args, env=None, timeout=180, check=True):
    environ = dict(os.environ, **(env or {}))
    result = run_session([FLOCKRUN, "-np", str(np), sys.executable,
                          os.path.join(EXAMPLES, script), *args], timeout=timeout, env=environ)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result if not check else result.stdout


def floats(pattern, text):
    return [float(v) for v in re.findall(pattern, text, re.M)]


# --- train_digits.py: the main job --------------------------------------------------------

def test_train_digits_main_job(tmp_path):
    png = tmp_path / "digits.png"
    out = run_example(2, "train_digits.py", "--epochs", "4", "--plot", str(png))
    assert re.search(r"epoch +4 +train loss", out), out
    finals = floats(r"rank \d final test accuracy: ([\d.]+)%", out)
    assert len(finals) == 2 and min(finals) > 85, out
    averaged = floats(r"averaged model test accuracy: ([\d.]+)%", out)[0]
    assert averaged > 85, out
    assert png.stat().st_size > 10000


def test_train_digits_hierarchical_atc_dynamic_on_faked_machines():
    # Bluefog's spellings of --atc and --dynamic.
    out = run_example(4, "train_digits.py", "--epochs", "4", "--atc-style",
                      "--enable-dynamic-topology", "--dist-optimizer",
                      "hierarchical_neighbor_allreduce", "--no-progress",
                      env={"FLOCK_LOCAL_SIZE": "2"})
    assert "4 ranks (2 machines)" in out and "(dynamic one-peer) with ATC" in out, out
    averaged = floats(r"averaged model test accuracy: ([\d.]+)%", out)[0]
    assert averaged > 85, out


# --- pytorch_benchmark.py ------------------------------------------------------------------

def test_pytorch_benchmark_prints_bluefogs_lines():
    out = run_example(2, "pytorch_benchmark.py", "--model", "lenet", "--batch-size", "16",
                      "--num-warmup-batches", "2", "--num-batches-per-iter", "3",
                      "--num-iters", "3", "--single-rank-img-sec", "1000")
    for line in ("Model: lenet", "Batch size: 16", "Number of CPUs: 2", "Running warmup...",
                 "Running benchmark..."):
        assert re.search("^" + re.escape(line) + "$", out, re.M), out
    assert len(re.findall(r"^Iter #\d: [\d.]+ img/sec per CPU$", out, re.M)) == 3, out
    per_rank = floats(r"^\[\d\] Img/sec per CPU: ([\d.]+) \+-[\d.]+$", out)
    total = floats(r"^Total img/sec on 2 CPU\(s\): ([\d.]+) \+-[\d.]+$", out)
    assert len(per_rank) == 2 and len(total) == 1, out
    # The job's throughput is the sum of the ranks' (each printed to 0.1).
    assert abs(total[0] - sum(per_rank)) <= 0.2, out
    assert "communication wait" in out and "Speedup over 1 CPU" in out, out


def test_pytorch_benchmark_atc_allreduce_and_static_topology():
    out = run_example(2, "pytorch_benchmark.py", "--model", "lenet", "--batch-size", "8",
                      "--num-warmup-batches", "1", "--num-batches-per-iter", "2",
                      "--num-iters", "2", "--dist-optimizer", "allreduce", "--atc-style",
                      "--disable-dynamic-topology")
    assert "Distributed optimizer: allreduce (ATC), static topology" in out, out
    assert re.search(r"^Total img/sec on 2 CPU\(s\): [\d.]+ \+-[\d.]+$", out, re.M), out


def test_pytorch_benchmark_win_put_runs_asynchronously():
    out = run_example(2, "pytorch_benchmark.py", "--model", "lenet", "--batch-size", "8",
                      "--num-warmup-batches", "1", "--num-batches-per-iter", "2",
                      "--num-iters", "2", "--dist-optimizer", "win_put")
    assert re.search(r"^Total img/sec on 2 CPU\(s\): [\d.]+ \+-[\d.]+$", out, re.M), out


def test_train_digits_asynchronous_win_put_with_a_slow_rank():
    # No collective between steps: every rank reports its own pace and accuracy.
    out = run_example(4, "train_digits.py", "--dist-optimizer", "win_put", "--slow-rank", "3",
                      "--step-ms", "2", "--epochs", "6", "--no-progress")
    rates = dict((int(r), float(v)) for r, v in re.findall(
        r"^  rank (\d)(?: \(slow\))?: ([\d.]+) steps/s, final test accuracy", out, re.M))
    accuracies = floats(r"steps/s, final test accuracy ([\d.]+)%$", out)
    assert sorted(rates) == [0, 1, 2, 3] and "rank 3 (slow)" in out, out
    assert min(accuracies) > 85, out
    averaged = floats(r"^  averaged model test accuracy: ([\d.]+)%$", out)
    assert averaged and averaged[0] > 85, out


# --- average_consensus.py ------------------------------------------------------------------

def test_average_consensus_shrinks_at_the_rate_of_the_topology(tmp_path):
    # Bluefog's "mesh": the two-sided ring, weights 1/3; on 4 ranks |lambda_2| = 1/3.
    png = tmp_path / "consensus.png"
    out = run_example(4, "average_consensus.py", "--virtual-topology", "mesh", "--max-iters",
                      "40", "--data-size", "500", "--save-plot-file", str(png))
    errors = dict((int(k), float(e)) for k, e in re.findall(
        r"^iteration +(\d+): consensus error ([\d.e+-]+)$", out, re.M))
    assert errors[0] == 1.0 and errors[1] < errors[0] and errors[10] < 1e-4, out
    assert errors[40] < 1e-12, out
    rate = floats(r"mesh on 4 ranks: error shrinks by a factor ([\d.]+) per iteration", out)
    assert rate and abs(rate[0] - 1 / 3) < 0.02, out
    mse = floats(r"^MSE at last iteration:  tensor\(([\d.e+-]+), dtype=torch.float64\)$", out)
    assert len(mse) == 4 and max(mse) < 1e-10, out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_average_consensus_dynamic_one_peer_is_exact_in_log2_steps():
    # One peer per step over the exponential graph: 4 ranks agree exactly after 2 steps.
    out = run_example(4, "average_consensus.py", "--enable-dynamic-topology", "--max-iters",
                      "5", "--data-size", "100")
    errors = dict((int(k), float(e)) for k, e in re.findall(
        r"^iteration +(\d+): consensus error ([\d.e+-]+)$", out, re.M))
    assert errors[1] > 0.1 and errors[2] < 1e-12, out


def test_average_consensus_asynchronous_push_sum_reaches_the_average(tmp_path):
    # Push-sum over window ops on the directed exponential graph, one rank slower.
    png = tmp_path / "push_sum.png"
    out = run_example(4, "average_consensus.py", "--asynchronous-mode", "--max-iters", "150",
                      "--data-size", "100", "--slow-rank", "3", "--save-plot-file", str(png))
    finals = floats(r"^push-sum: 150 iterations in [\d.]+ s, error [\d.e+-]+, after the last "
                    r"collect ([\d.e+-]+)$", out)
    # Fast ranks may stop before the slow one's last shares mixed in (how far they got
    # depends on the machine's load), but what push-sum conserves is exact.
    assert len(finals) == 4 and max(finals) < 1.0, out
    conserved = floats(r"^push-sum: sum of x / sum of p over the ranks: error ([\d.e+-]+)", out)
    assert conserved and conserved[0] < 1e-12, out
    assert png.read_bytes()[:4] == b"\x89PNG"


# --- decentralized_optimization.py ---------------------------------------------------------

def method_errors(out):
    return {name: float(e) for name, e in re.findall(
        r"^  (\w+) +relative error ([\d.e+-]+)$", out, re.M)}


def test_decentralized_optimization_exact_methods_converge(tmp_path):
    # A ring of 4 (of 3 it would be complete, and plain diffusion exact).
    out = run_example(4, "decentralized_optimization.py", "--method", "all", "--task",
                      "linear_regression", "--max-iter", "400",
                      "--save-plot-file", str(tmp_path / "o.png"))
    errors = method_errors(out)
    assert errors["exact_diffusion"] < 1e-6, out
    assert errors["gradient_tracking"] < 1e-3 and errors["push_diging"] < 1e-3, out
    assert errors["diffusion"] > errors["exact_diffusion"], out
    # Bluefog's check: at x* the average gradient vanishes, each rank's own does not.
    assert len(floats(r"^\[DG\] Rank \d: global gradient norm: ([\d.e+-]+)$", out)) == 4, out
    assert max(floats(r"^\[DG\] Rank \d: global gradient norm: ([\d.e+-]+)$", out)) < 1e-8
    assert min(floats(r"^\[DG\] Rank \d: local gradient norm: ([\d.e+-]+)$", out)) > 1e-3
    assert "self weights with A: " in out and (tmp_path / "o.png").exists(), out


def test_push_diging_converges_on_a_directed_graph():
    # ExponentialGraph(4) is directed: i sends to i+1 and i+2 only.
    out = run_example(4, "decentralized_optimization.py", "--method", "push_diging",
                      "--topology", "expo2", "--max-iter", "600", "--save-plot-file", "")
    assert method_errors(out)["push_diging"] < 1e-4, out
    assert max(floats(r"^\[push_diging\] Rank \d: global gradient norm: ([\d.e+-]+)$",
                      out)) < 1e-4, out


# --- pytorch_mnist.py and pytorch_resnet.py ------------------------------------------------

def test_pytorch_mnist_learns_the_digits():
    out = run_example(2, "pytorch_mnist.py", "--epochs", "2", "--batch-size", "16",
                      "--lr", "0.05", "--log-interval", "20")
    assert "data: scikit-learn's digits scaled to 28x28" in out, out
    assert re.search(r"^\[1\] Train Epoch: 2 \[0/700 \(0%\)\]\tLoss: [\d.]+$", out, re.M), out
    accuracies = floats(r"^Test set: Average loss: [\d.]+, Accuracy: ([\d.]+)%$", out)
    assert len(accuracies) == 2 and accuracies[-1] > 50, out  # chance is 10 %
    assert re.search(r"^\[1\]:  \[\(", out, re.M), out


def test_pytorch_resnet_trains_on_synthetic_images():
    out = run_example(2, "pytorch_resnet.py", "--epochs", "2", "--synthetic-size", "128",
                      "--batch-size", "16", "--val-batch-size", "32", "--warmup-epochs", "0",
                      "--no-progress", "--dist-optimizer", "neighbor_allreduce", timeout=300)
    train = floats(r"^Train Epoch     #\d: loss [\d.]+, accuracy ([\d.]+)%$", out)
    assert len(train) == 2 and train[1] > 30, out  # chance is 10 %
    assert len(re.findall(r"^Validate Epoch  #\d: loss [\d.]+, accuracy [\d.]+%$", out,
                          re.M)) == 2, out


# --- optional extras -----------------------------------------------------------------------

HIDE_EXTRAS = """
import sys

class HideExtras:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tqdm", "matplotlib"):
            raise ImportError("No module named {!r} (hidden by the test)".format(name))
        return None

sys.meta_path.insert(0, HideExtras())
"""


@pytest.fixture
def without_extras(tmp_path):
    """PYTHONPATH with a sitecustomize that makes `import tqdm` / `import matplotlib` fail."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(textwrap.dedent(HIDE_EXTRAS))
    paths = [str(hide)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def test_training_runs_without_tqdm_and_matplotlib(tmp_path, without_extras):
    png = tmp_path / "digits.png"
    out = run_example(2, "train_digits.py", "--epochs", "1", "--plot", str(png),
                      env=without_extras)
    assert out.count("progress bar skipped: tqdm is not installed") == 1, out
    assert out.count("plot skipped: matplotlib is not installed") == 1, out
    assert "averaged model test accuracy" in out and not png.exists(), out
    out = run_example(2, "pytorch_resnet.py", "--epochs", "1", "--synthetic-size", "32",
                      "--batch-size", "16", "--model", "resnet18", env=without_extras)
    assert out.count("progress bar skipped: tqdm is not installed") == 1, out


def test_consensus_and_optimization_run_without_matplotlib(tmp_path, without_extras):
    png = tmp_path / "c.png"
    out = run_example(2, "average_consensus.py", "--max-iters", "3", "--data-size", "10",
                      "--save-plot-file", str(png), env=without_extras)
    assert "plot skipped: matplotlib is not installed" in out and not png.exists(), out
    out = run_example(2, "decentralized_optimization.py", "--max-iter", "5",
                      "--save-plot-file", str(png), env=without_extras)
    assert "plot skipped: matplotlib is not installed" in out and not png.exists(), out
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "topology_consensus_plot.py"),
                             "--size", "4", "--iterations", "5", "--output", str(png)],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, **without_extras))
    assert result.returncode == 0, result.stderr
    assert "FullyConnectedGraph" in result.stdout and "plot skipped" in result.stdout
    assert not png.exists()


# --- elastic_digits.py: the elastic example outside an elastic job ----------------------

def test_elastic_digits_runs_as_an_ordinary_job():
    """Without flockrun --elastic commits stay in memory and the script trains as usual
    (tests/python/launcher/test_elastic_end_to_end.py runs it elastic)."""
    out = run_example(3, "elastic_digits.py", "--epochs", "2", "--print-commits")
    assert re.search(r"epoch +1 +ranks 3 +step +58 ", out), out
    assert "committed step 58 (3 ranks)" in out and "resumes" not in out
    assert floats(r"^final test accuracy ([\d.]+)%", out)[0] > 85, out
