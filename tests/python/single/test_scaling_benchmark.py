"""The scaling benchmark (benchmarks/bench_scaling.py, run_scaling.py): its synthetic model
has torchvision's parameters and a backward pass that reaches them layer by layer in
reverse while sleeping the compute asked for (without using the CPU); the hooks mode runs
every method, torch DDP included, at np 2; the report's tables and JSON summary; the
rounds (run_scaling.py --rounds: interleaved jobs, rotated methods, medians and min-max
over the rounds, on synthetic records and a fake cluster); and pytorch_benchmark.py's DDP
mode."""

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

import run_scaling  # noqa: E402
import scaling_model  # noqa: E402
import scaling_report  # noqa: E402
import scaling_rounds  # noqa: E402

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
    records = scaling_report.summarize(records, batch=64)
    text = scaling_report.table(records, ("1gbit", "mobilenet_v2", "hooks", "none"))
    assert "rounds" not in text and not re.search(r"\d \(\d+-\d+\)", text), text
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



def test_rounds_interleave_the_jobs_and_rotate_the_methods():
    jobs = scaling_rounds.schedule(3, ["1gbit", "none"], [1, 4], ["resnet50"],
                                   ["none", "fp16"], ["ddp", "allreduce", "hierarchical"])
    assert [j["round"] for j in jobs] == [1] * 8 + [2] * 8 + [3] * 8
    where = [(j["rate"], j["hosts"], j["model"], j["compression"]) for j in jobs]
    assert where[:8] == where[8:16] == where[16:]
    assert where[:4] == [("1gbit", 1, "resnet50", "none"), ("1gbit", 1, "resnet50", "fp16"),
                         ("1gbit", 4, "resnet50", "none"), ("1gbit", 4, "resnet50", "fp16")]
    assert [j["methods"] for j in jobs[::8]] == [["ddp", "allreduce", "hierarchical"],
                                                 ["allreduce", "hierarchical", "ddp"],
                                                 ["hierarchical", "ddp", "allreduce"]]
    assert all(j["methods"] == jobs[8 * (k // 8)]["methods"] for k, j in enumerate(jobs))
    assert scaling_rounds.rotate(["a", "b"], 5) == ["b", "a"] and scaling_rounds.rotate([], 3) == []
    assert len(scaling_rounds.schedule(1, ["1gbit"], [1, 2, 4], ["resnet50", "mobilenet_v2"],
                                       ["none"], ["ddp"])) == 6


# Rounds of steps (s): 1 host, 2 ranks: images/s = 128 / step; 4 hosts, 8 ranks: 512 / step.
ROUNDS = {("ddp", 1): [0.128, 0.1, 0.16],          # 1000, 1280, 800 images/s
          ("allreduce", 1): [0.1, 0.1, 0.1],       # 1280 each
          ("ddp", 4): [0.5, 0.4, 1.024],           # 1024, 1280, 500
          ("allreduce", 4): [0.4, 0.8]}            # 1280, 640: a round hung


def _rounds(**extra):
    return [_record(m, h, step, round=k + 1, **extra) for k in range(3)
            for (m, h), steps in ROUNDS.items() for step in steps[k:k + 1]]


def test_summary_is_the_median_over_the_rounds_with_their_range():
    records = _rounds()
    rows = scaling_report.summarize(records, batch=64)
    assert [(r["method"], r["machines"], r["rounds"]) for r in rows] == [
        ("ddp", 1, 3), ("allreduce", 1, 3), ("ddp", 4, 3), ("allreduce", 4, 2)]
    ddp4 = rows[2]
    assert ddp4["images_per_s"] == pytest.approx(1024)
    assert (ddp4["images_per_s_min"], ddp4["images_per_s_max"]) == pytest.approx((500, 1280))
    assert ddp4["step_s"] == pytest.approx(0.5) and ddp4["wait_s"] == pytest.approx(0.39)
    assert ddp4["wait_share"] == pytest.approx(0.39 / 0.5)  # the median of the rounds'
    assert "step_times" not in ddp4 and "round" not in ddp4
    assert rows[3]["images_per_s"] == pytest.approx(960)  # two rounds: their mean
    # B = the median over the methods of their 1-host medians: (1000 + 1280) / 2
    base = 1140
    assert ddp4["speedup"] == pytest.approx(1024 / base)
    assert ddp4["efficiency"] == pytest.approx(1024 / (4 * base))
    assert (ddp4["efficiency_min"], ddp4["efficiency_max"]) == pytest.approx(
        (500 / (4 * base), 1280 / (4 * base)))
    assert rows[0]["efficiency"] == pytest.approx(1000 / base)
    # the raw records keep their own round's numbers
    assert records[0]["images_per_s"] == pytest.approx(1000)
    text = scaling_report.table(rows, ("1gbit", "mobilenet_v2", "hooks", "none"))
    assert "Medians over 3 rounds (2 for some cells); images/s as median (lowest-highest " \
        "round)." in text, text
    assert re.search(r"^\| ddp \| 1000 \(800-1280\) \| 1024 \(500-1280\) \| 22% \| ", text,
                     re.M), text
    assert re.search(r"^\| 8 \(4 x 2\) \| allreduce \| 960 \(640-1280\) \| 0.84 \| 21% ",
                     text, re.M), text
    summary = scaling_report.json_summary(rows)
    assert summary[2] == {"model": "mobilenet_v2", "rate": "1gbit", "method": "ddp",
                          "hosts": 4, "images_per_s": pytest.approx(1024),
                          "efficiency": pytest.approx(1024 / 4560),
                          "wait_share": pytest.approx(0.78), "rounds": 3,
                          "images_per_s_min": pytest.approx(500),
                          "images_per_s_max": pytest.approx(1280),
                          "efficiency_min": pytest.approx(500 / 4560),
                          "efficiency_max": pytest.approx(1280 / 4560)}


def test_one_round_per_cell_reports_that_round():
    records = [_record("ddp", 1, 0.128), _record("ddp", 4, 0.5, compression="fp16")]
    rows = scaling_report.summarize([dict(r) for r in records], batch=64)
    for raw, row in zip(records, rows):
        assert row["rounds"] == 1 and row["step_s"] == raw["step_s"]
        assert row["images_per_s"] == row["images_per_s_min"] == row["images_per_s_max"]
    # compression is a case of its own (fp16 has no 1-host baseline here)
    assert scaling_report.cases(rows, ["mobilenet_v2"], ["1gbit"]) == [
        ("1gbit", "mobilenet_v2", "hooks", "none"), ("1gbit", "mobilenet_v2", "hooks", "fp16")]
    assert rows[1]["efficiency"] is None
    assert [r["compression"] for r in scaling_report.json_summary(rows)] == ["none", "fp16"]


class FakeCluster:
    """EmulatedCluster's part run_scaling.measure uses; records its rates."""

    def __init__(self, hosts):
        self.hosts, self.rates = hosts, []

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False

    def set_rate(self, rate):
        self.rates.append(rate)


def test_measure_runs_the_rounds_interleaved_and_tags_their_records(tmp_path, monkeypatch):
    """run_scaling's loop with a fake cluster and fake jobs: allreduce hangs once, in round
    2 at 4 hosts without compression; the methods after it run in a new job."""
    calls, clusters = [], []

    def fake_job(cluster, job, compute_s, args):
        calls.append((job["round"], job["hosts"], job["compression"], job["methods"]))
        hang = job["round"] == 2 and job["hosts"] == 4 and job["compression"] == "none" \
            and job["methods"][0] != "neighbor_one_peer"
        methods = job["methods"][:job["methods"].index("allreduce")] if hang else job["methods"]
        found = [_record(m, job["hosts"], 0.2, compression=job["compression"]) for m in methods]
        return found, ("the stacks" if hang else None)

    monkeypatch.setattr(run_scaling, "run_job", fake_job)
    monkeypatch.setattr(run_scaling, "HUNG", [])
    monkeypatch.setattr(run_scaling.emu, "namespaces_supported", lambda: None)
    monkeypatch.setattr(run_scaling.emu, "EmulatedCluster",
                        lambda hosts: clusters.append(FakeCluster(hosts)) or clusters[-1])
    args = run_scaling.parse_args(
        ["--rounds", "2", "--hosts", "1", "4", "--models", "mobilenet_v2", "--rates", "1gbit",
         "--methods", "ddp", "allreduce", "neighbor_one_peer", "--compression", "none", "fp16",
         "--out", str(tmp_path)])
    with open(tmp_path / "scaling.jsonl", "w") as saved:
        records = run_scaling.measure(args, saved)
    first = ["ddp", "allreduce", "neighbor_one_peer"]
    second = ["allreduce", "neighbor_one_peer", "ddp"]
    assert calls == [(1, 1, "none", first), (1, 1, "fp16", first), (1, 4, "none", first),
                     (1, 4, "fp16", first), (2, 1, "none", second), (2, 1, "fp16", second),
                     (2, 4, "none", second), (2, 4, "none", ["neighbor_one_peer", "ddp"]),
                     (2, 4, "fp16", second)]
    assert clusters[0].hosts == 4 and clusters[0].rates == ["1gbit"]
    assert run_scaling.HUNG == ["mobilenet_v2 on 4 hosts, links 1gbit, round 2: allreduce"]
    assert (tmp_path / "hung-mobilenet_v2-4hosts-allreduce-round2.log").read_text() == \
        "the stacks"
    assert len(records) == 2 * 4 * 3 - 1
    assert [(r["round"], r["rate"]) for r in records[:3]] == [(1, "1gbit")] * 3
    saved = [json.loads(line) for line in (tmp_path / "scaling.jsonl").read_text().splitlines()]
    assert saved == records
    rows = scaling_report.summarize(records, batch=64)
    assert len(rows) == 2 * 2 * 3
    assert {(r["method"], r["machines"], r["compression"]): r["rounds"] for r in rows}[
        ("allreduce", 4, "none")] == 1


def test_run_scaling_options():
    assert run_scaling.parse_args([]).rounds == 1
    assert run_scaling.parse_args([]).compression == ["none"]
    assert run_scaling.parse_args(["--compression", "fp16"]).compression == ["fp16"]
    for wrong in (["--rounds", "0"], ["--mode", "hand", "--compression", "none", "fp16"]):
        with pytest.raises(SystemExit):
            run_scaling.parse_args(wrong)


def test_run_scaling_redoes_a_saved_run_of_several_rounds(tmp_path):
    saved = tmp_path / "scaling.jsonl"
    saved.write_text("".join(json.dumps(r) + "\n" for r in
                             _rounds() + _rounds(compression="fp16")))
    result = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "run_scaling.py"),
                             "--from-jsonl", str(saved), "--out", str(tmp_path),
                             "--json-summary", str(tmp_path / "s.json")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "scaling.md").read_text()
    assert text.count("Medians over 3 rounds") == 2 and "hooks mode, ATC overlapping the " \
        "next forward, fp16 compression (compute 0.100 s per step)" in text, text
    assert "| ddp | 1000 (800-1280) | 1024 (500-1280) | 22% |" in text
    for mode in ("hooks", "hooks-fp16"):
        name = "scaling-mobilenet_v2-1gbit-{}.png".format(mode)
        assert (tmp_path / name).stat().st_size > 10000
    summary = json.loads((tmp_path / "s.json").read_text())
    assert [(r["method"], r["hosts"], r["compression"], r["rounds"]) for r in summary] == [
        (m, h, c, 2 if (m, h) == ("allreduce", 4) else 3)
        for c in ("none", "fp16") for m, h in ROUNDS]

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
