"""The scaling benchmark (benchmarks/bench_scaling.py, run_scaling.py): its synthetic model
has torchvision's parameters and a backward pass that reaches them layer by layer in
reverse while sleeping the compute asked for (without using the CPU); the hooks mode runs
every method, torch DDP included, at np 2; the report's tables and JSON summary; and
pytorch_benchmark.py's DDP mode."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import torch

from jobs import run_session

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCHMARKS)

import scaling_model  # noqa: E402
import scaling_report  # noqa: E402

FLOCKRUN = shutil.which("flockrun")
needs_flockrun = pytest.mark.skipif(FLOCKRUN is None, reason="flockrun is not on PATH")


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2"])
def test_synthetic_model_has_torchvisions_parameter_names_and_shapes(name):
    real = [(n, p.shape) for n, p in scaling_model.MODELS[name]().named_parameters()]
    synthetic = [(n, p.shape) for n, p in scaling_model.build(name, 1.0).named_parameters()]
    assert synthetic == real


def _gradient_order(model):
    """Parameter names in the order their gradient accumulators' hooks fire."""
    fired, accumulators = [], []
    for name, p in model.named_parameters():
        accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
        accumulator.register_hook(lambda *_, name=name: fired.append(name))
        accumulators.append(accumulator)  # a hook lives as long as its accumulator
    return fired, accumulators


def test_backward_reaches_layers_in_reverse_and_sleeps_the_compute():
    compute_s = 0.4
    model = scaling_model.build("mobilenet_v2", compute_s)
    index = {id(p): i for i, layer in enumerate(model.order) for p in layer.parameters()}
    layer_of = {n: index[id(p)] for n, p in model.named_parameters()}
    fired, _keep = _gradient_order(model)
    wall, cpu = time.perf_counter(), time.process_time()
    model(torch.zeros(1)).sum().backward()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert sorted(fired) == sorted(layer_of), "every parameter gets one gradient"
    layers = [layer_of[n] for n in fired]
    assert layers == sorted(layers, reverse=True), "reverse layer order"
    assert all(p.grad.shape == p.shape for p in model.parameters())
    assert model.clock.requested == pytest.approx(compute_s)
    assert compute_s <= wall < compute_s * 1.25 + 0.05, wall
    assert cpu < 0.5 * wall, "sleeping must not burn the CPU"


def test_layers_sleep_in_proportion_to_their_flops():
    specs = scaling_model.layer_specs("resnet50")
    model = scaling_model.build("resnet50", 3.0)
    total = sum(flops for _, _, flops in specs)
    assert total == pytest.approx(8.2e9, rel=0.02)  # ResNet-50: 4.1 GMAC per image
    for (_, _, flops), layer in zip(specs, model.order):
        assert layer.forward_s == pytest.approx(1.0 * flops / total)
        assert layer.backward_s == pytest.approx(2.0 * flops / total)


def _record(method, machines, step_s, **extra):
    return dict({"model": "mobilenet_v2", "method": method, "rate": "1gbit", "mode": "hooks",
                 "overlap": True, "ranks": 2 * machines, "machines": machines,
                 "compute_s": 0.1, "step_s": step_s, "wait_s": step_s - 0.11,
                 "apply_s": 0.01}, **extra)


def test_report_tables_and_json_summary():
    records = [_record(m, h, s) for m, h, s in [
        ("ddp", 1, 0.12), ("allreduce", 1, 0.12), ("neighbor_one_peer", 1, 0.12),
        ("ddp", 2, 0.3), ("allreduce", 2, 0.4), ("neighbor_one_peer", 2, 0.2)]]
    scaling_report.summarize(records, batch=64)
    text = scaling_report.table(records, ("1gbit", "mobilenet_v2", "hooks"))
    assert re.search(r"^\| ddp \| 1067 \| 853 \| 40% \| 8% / 63% \|$", text, re.M), text
    assert re.search(r"^\| 4 \(2 x 2\) \| neighbor_one_peer \| 1280 \| 1.20 \| 60% \| 45% "
                     r"\| 0.100 \| 0.090 \| 0.010 \| 0.200 \|$", text, re.M), text
    summary = scaling_report.json_summary(records)
    assert summary[3] == {"model": "mobilenet_v2", "rate": "1gbit", "method": "ddp", "hosts": 2,
                          "images_per_s": pytest.approx(64 * 4 / 0.3),
                          "efficiency": pytest.approx(0.4), "wait_share": pytest.approx(0.19 / 0.3)}


def test_run_scaling_redoes_a_saved_run_of_the_hand_mode(tmp_path):
    # Records saved before the hooks mode: no "mode", no "apply_s".
    saved = tmp_path / "scaling.jsonl"
    saved.write_text("".join(json.dumps({k: v for k, v in _record(m, h, s).items()
                                         if k not in ("mode", "apply_s")}) + "\n"
                             for m, h, s in [("allreduce", 1, 0.2), ("allreduce", 2, 0.3)]))
    result = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "run_scaling.py"),
                             "--from-jsonl", str(saved), "--out",
                             str(tmp_path), "--json-summary", str(tmp_path / "s.json")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "links 1gbit, hand mode" in (tmp_path / "scaling.md").read_text()
    assert (tmp_path / "scaling-mobilenet_v2-1gbit-hand.png").stat().st_size > 10000
    assert [r["hosts"] for r in json.loads((tmp_path / "s.json").read_text())] == [1, 2]


@needs_flockrun
def test_hooks_mode_runs_every_method_and_ddp_at_np2():
    result = run_session([FLOCKRUN, "-np", "2", sys.executable,
                          os.path.join(BENCHMARKS, "bench_scaling.py"), "--model",
                          "mobilenet_v2", "--compute-s", "0.05", "--warmup", "1",
                          "--steps", "2"], timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["method"] for r in records] == list(scaling_report.METHODS[1:]) + ["ddp"]
    for r in records:
        assert r["mode"] == "hooks" and r["ranks"] == 2 and len(r["step_times"]) == 2
        assert r["step_s"] >= 0.05 and r["apply_s"] > 0
        # the breakdown adds up: wait = step - compute - apply
        assert r["wait_s"] == pytest.approx(r["step_s"] - 0.05 - r["apply_s"], abs=1e-3)


@needs_flockrun
def test_pytorch_benchmark_runs_torch_ddp():
    result = run_session([FLOCKRUN, "-np", "2", sys.executable,
                          os.path.join(ROOT, "examples", "python", "pytorch_benchmark.py"),
                          "--model", "lenet", "--batch-size", "8", "--num-warmup-batches",
                          "1", "--num-batches-per-iter", "2", "--num-iters", "2",
                          "--dist-optimizer", "ddp"], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Distributed optimizer: ddp (torch DistributedDataParallel over gloo)" in \
        result.stdout
    assert re.search(r"^Total img/sec on 2 CPU\(s\): [\d.]+", result.stdout, re.M)
    assert "communication wait" in result.stdout
