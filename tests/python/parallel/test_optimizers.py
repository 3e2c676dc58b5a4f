"""The distributed optimizers on real training problems, at any world size.

- digits (the main job's data and model, examples/python/train_digits.py):
  every optimizer x communication type reaches >= 90 % test accuracy in a fixed
  small budget and stays within 2 points of gradient allreduce; with one rank
  every optimizer is plain single-process SGD, parameter for parameter.
- linear regression (as Bluefog's optimizer tests): SGD and Adam, AWC and ATC,
  static and dynamic one-peer topology: training and test MSE at the noise level.
"""

import math
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python"))
import train_digits as digits  # noqa: E402

BUDGET = dict(epochs=6, batch_size=16, lr=0.05)
CASES = [("gradient_allreduce", False, False)] + [
    (kind, atc, dynamic)
    for kind in ("allreduce", "neighbor_allreduce", "hierarchical_neighbor_allreduce")
    for atc in (False, True)
    for dynamic in ((False, True) if kind == "neighbor_allreduce" else (False,))]


@pytest.fixture(scope="module")
def data():
    return digits.load_data(seed=0)


@pytest.fixture(autouse=True)
def default_topology_afterwards():
    yield
    bf.set_topology(tu.ExponentialGraph(bf.size()))


def _args(kind, atc, dynamic):
    return digits.parse_args(["--dist-optimizer", kind, "--hidden", "32", "--seed", "3",
                              "--lr", str(BUDGET["lr"])] +
                             (["--atc"] if atc else []) + (["--dynamic"] if dynamic else []))


def _train_digits(data, kind, atc=False, dynamic=False, distributed=True):
    """Trains the example's model on this rank's shard; returns (model, test accuracy)."""
    x_train, y_train, x_test, y_test = data
    rank, size = (bf.rank(), bf.size()) if distributed else (0, 1)
    args = _args(kind, atc, dynamic)
    if kind == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    model = digits.make_model(args.hidden, args.seed)
    if distributed:
        optimizer = digits.make_optimizer(args, model)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=BUDGET["lr"], momentum=args.momentum)
    schedule = digits.DynamicTopology(args) if dynamic else None
    shard = torch.arange(rank, len(x_train), size)
    x, y = x_train[shard], y_train[shard]
    steps = math.ceil((len(x_train) // size) / BUDGET["batch_size"])
    generator = torch.Generator().manual_seed(rank)
    for _ in range(BUDGET["epochs"]):
        order = torch.randperm(len(x), generator=generator)
        for step in range(steps):
            batch = order[(step * BUDGET["batch_size"]) % len(x):][:BUDGET["batch_size"]]
            if schedule is not None:
                schedule.apply(optimizer)
            optimizer.zero_grad()
            F.cross_entropy(model(x[batch]), y[batch]).backward()
            optimizer.step()
    return model, digits.evaluate(model, x_test, y_test)[1]


def test_every_optimizer_converges_on_digits(data):
    reference = None
    results = {}
    for kind, atc, dynamic in CASES:
        _, acc = _train_digits(data, kind, atc, dynamic)
        # The worst rank's own model counts.
        worst = bf.allreduce(torch.tensor([acc]), op="min", name="digits.acc").item()
        results["{}{}{}".format(kind, " atc" if atc else "", " dynamic" if dynamic else "")] = worst
        if reference is None:
            reference = worst  # gradient allreduce comes first
    for case, acc in results.items():
        assert acc >= 0.90, "{}: {:.3f} test accuracy (all: {})".format(case, acc, results)
        assert acc >= reference - 0.02, "{}: {:.3f} vs gradient allreduce {:.3f}".format(
            case, acc, reference)


@pytest.mark.skipif(bf.size() != 1, reason="a job of one rank")
@pytest.mark.parametrize("kind,atc,dynamic", [c for c in CASES if not c[2]])
def test_one_rank_is_plain_sgd(data, kind, atc, dynamic):
    model, _ = _train_digits(data, kind, atc)
    plain, _ = _train_digits(data, kind, distributed=False)
    for (name, p), q in zip(model.named_parameters(), plain.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)


def test_gradient_allreduce_keeps_models_equal_and_empty_lets_them_drift(data):
    model, _ = _train_digits(data, "gradient_allreduce")
    assert digits.consensus_distance(model, "drift.gradient") < 1e-5
    opt_model = digits.make_model(32, 3)
    optimizer = bf.DistributedAdaptWithCombineOptimizer(
        torch.optim.SGD(opt_model.parameters(), lr=0.1), opt_model, communication_type="empty")
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(bf.rank()))
    optimizer.zero_grad()
    opt_model(x).sum().backward()
    before = bf.engine_counters()["requests"]
    optimizer.step()
    assert bf.engine_counters()["requests"] == before  # nothing communicated
    distance = digits.consensus_distance(opt_model, "drift.empty")
    assert (distance > 0) == (bf.size() > 1)


# ---- linear regression, as Bluefog's optimizer tests

NOISE = 0.1


def _regression_problem(rank, n=200, dim=5):
    w_true = torch.arange(1.0, dim + 1.0, dtype=torch.float64).reshape(dim, 1) / dim
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(n, dim, generator=g, dtype=torch.float64)
    y = x @ w_true + NOISE * torch.randn(n, 1, generator=g, dtype=torch.float64)
    return x, y


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("atc", [False, True], ids=["awc", "atc"])
@pytest.mark.parametrize("base", ["sgd", "adam"])
def test_linear_regression_reaches_the_noise_level(base, atc, dynamic):
    rank, size = bf.rank(), bf.size()
    x, y = _regression_problem(rank)
    x_test, y_test = _regression_problem(rank + 100)
    model = torch.nn.Linear(x.shape[1], 1, bias=False).double()
    torch.nn.init.zeros_(model.weight)
    inner = (torch.optim.SGD(model.parameters(), lr=0.05) if base == "sgd"
             else torch.optim.Adam(model.parameters(), lr=0.01))
    wrap = bf.DistributedAdaptThenCombineOptimizer if atc else bf.DistributedAdaptWithCombineOptimizer
    optimizer = wrap(inner, model)
    schedule = tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), rank) if dynamic else None
    for step in range(400):
        if schedule is not None:
            send, recv = next(schedule)
            optimizer.self_weight = 1.0 / (len(recv) + 1)
            optimizer.src_weights = {r: 1.0 / (len(recv) + 1) for r in recv}
            optimizer.dst_weights = send
        batch = torch.arange(step * 20, step * 20 + 20) % len(x)
        optimizer.zero_grad()
        F.mse_loss(model(x[batch]), y[batch]).backward()
        optimizer.step()
    with torch.no_grad():
        train_mse = F.mse_loss(model(x), y).item()
        test_mse = F.mse_loss(model(x_test), y_test).item()
    # The noise variance is 0.01: what the best linear model leaves.
    worst = bf.allreduce(torch.tensor([max(train_mse, test_mse)]), op="max",
                         name="regression.mse").item()
    assert worst < 2.5 * NOISE ** 2, "{} {} {}: MSE {:.4f} ({} ranks)".format(
        base, "atc" if atc else "awc", "dynamic" if dynamic else "static", worst, size)
