"""The Python examples run end to end under flockrun (smoke tests at small sizes),
and print what their users read: the digits summary, the benchmark's Total line,
the consensus error, the optimization methods' errors."""

import os
import re
import shutil
import subprocess
import sys

import pytest

FLOCKRUN = shutil.which("flockrun")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python")
pytestmark = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not installed on PATH")


def run_example(np, script, *args, env=None, timeout=240):
    environ = dict(os.environ, **(env or {}))
    result = subprocess.run([FLOCKRUN, "-np", str(np), sys.executable,
                             os.path.join(EXAMPLES, script), *args],
                            capture_output=True, text=True, timeout=timeout, env=environ)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_train_digits_main_job(tmp_path):
    png = tmp_path / "digits.png"
    out = run_example(2, "train_digits.py", "--epochs", "4", "--plot", str(png))
    assert re.search(r"epoch +4 +train loss", out), out
    finals = [float(a) for a in re.findall(r"rank \d final test accuracy: ([\d.]+)%", out)]
    assert len(finals) == 2 and min(finals) > 85, out
    averaged = float(re.search(r"averaged model test accuracy: ([\d.]+)%", out).group(1))
    assert averaged > 85, out
    assert png.stat().st_size > 10000


def test_train_digits_hierarchical_atc_dynamic_on_faked_machines():
    out = run_example(4, "train_digits.py", "--epochs", "4", "--atc", "--dynamic",
                      "--dist-optimizer", "hierarchical_neighbor_allreduce", "--no-progress",
                      env={"FLOCK_LOCAL_SIZE": "2"})
    assert "4 ranks (2 machines)" in out, out
    averaged = float(re.search(r"averaged model test accuracy: ([\d.]+)%", out).group(1))
    assert averaged > 85, out


def test_pytorch_benchmark_prints_its_total_line():
    out = run_example(2, "pytorch_benchmark.py", "--model", "lenet", "--batch-size", "16",
                      "--num-warmup-batches", "2", "--num-batches-per-iter", "3",
                      "--num-iters", "3", "--single-rank-img-sec", "1000")
    assert len(re.findall(r"^Iter #\d+: [\d.]+ img/sec per CPU$", out, re.M)) == 3, out
    assert re.search(r"^Total img/sec on 2 CPU\(s\): [\d.]+ \+- [\d.]+$", out, re.M), out
    assert "communication wait" in out and "Speedup over 1 CPU" in out, out


def test_average_consensus_reaches_the_mean(tmp_path):
    png = tmp_path / "consensus.png"
    out = run_example(3, "average_consensus.py", "--iterations", "40", "--plot", str(png))
    last = float(re.search(r"iteration +40: consensus error ([\d.e+-]+)", out).group(1))
    assert last < 1e-10, out
    assert png.exists()


def test_decentralized_optimization_exact_methods_converge():
    # A ring of 4 (of 3 it would be complete, and plain diffusion exact).
    out = run_example(4, "decentralized_optimization.py", "--iterations", "400")
    errors = dict(re.findall(r"^  (\w[\w ]*\w) +relative error ([\d.e+-]+)$", out, re.M))
    assert float(errors["exact diffusion"]) < 1e-6, out
    assert float(errors["gradient tracking"]) < 1e-3, out
    assert float(errors["diffusion"]) > float(errors["exact diffusion"]), out
