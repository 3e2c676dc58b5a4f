"""num_steps_per_communication = J against an independent reference.

Every rank simulates all ranks: n twin models with plain torch optimizers, the
ranks' data (a function of rank, round and pass) and a dense mixing matrix W
built from the topology (neighbor_reference). After each step() the wrapped
model's parameters must equal its twin's. Two ways to spend J passes:

- accumulate: zero_grad, J backward passes, one step(): AWC and ATC exchange at
  that step, with the local optimizer applied once to the accumulated p.grad;
- local: step() after each backward pass: J-1 local steps, then the exchanging one;
- split (J = 3): pass, pass, step() (local), pass, step() (exchanging).

Gradient allreduce averages the gradients at every step() (Bluefog's rule), so
in the local pattern every step communicates. With 4 ranks the module runs on
2 faked machines of 2 ranks, so the hierarchical exchange mixes machine means.
"""

import contextlib

import networkx as nx
import numpy as np
import pytest
import torch

import flock.torch as bf
import neighbor_reference as nr
from emulated_machines import fake_machines
from flock import topology as tu

ROUNDS = 3  # exchanges per case
COMMUNICATIONS = ["neighbor_allreduce", "hierarchical_neighbor_allreduce", "allreduce"]
CASES = ([(kind, comm) for kind in ("atc", "awc") for comm in COMMUNICATIONS] +
         [("gradient_allreduce", None)])


@pytest.fixture(scope="module", autouse=True)
def machines():
    faking = bf.size() >= 4 and bf.size() % 2 == 0
    with fake_machines(2) if faking else contextlib.nullcontext():
        yield


def _model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(),
                               torch.nn.Linear(3, 2)).double()


def _make_optimizer(base, model):
    if base == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    return torch.optim.Adam(model.parameters(), lr=0.01)


def _wrap(kind, optimizer, model, comm, steps):
    if kind == "gradient_allreduce":
        return bf.DistributedGradientAllreduceOptimizer(optimizer, model, steps)
    wrapper = (bf.DistributedAdaptThenCombineOptimizer if kind == "atc"
               else bf.DistributedAdaptWithCombineOptimizer)
    return wrapper(optimizer, model, communication_type=comm, num_steps_per_communication=steps)


def _steps_after(pattern, steps):
    """The passes (0-based) that a step() follows."""
    last = {steps - 1}
    return {"accumulate": last, "local": set(range(steps)), "split": {1} | last}[pattern]


def _loss(model, rank, round_, pass_):
    g = torch.Generator().manual_seed(10007 * rank + 101 * round_ + pass_)
    x = torch.randn(5, 4, generator=g, dtype=torch.float64)
    y = torch.randn(5, 2, generator=g, dtype=torch.float64)
    return (model(x) - y).pow(2).mean()


def _machine_mixing(machines):
    """A weighted ring of machines (self 0.7, next 0.3): unlike a uniform one, it does
    not reduce to the global mean at 2 machines."""
    w = np.eye(machines)
    if machines > 1:
        w = 0.7 * w + 0.3 * np.roll(np.eye(machines), 1, axis=1)
    return w


def _mixer(comm):
    """Sets the topology comm uses; returns the reference mix of all ranks' values."""
    n = bf.size()
    if comm == "neighbor_allreduce":
        topology = tu.ExponentialGraph(n)
        bf.set_topology(topology)
        w = nr.static_mixing(topology, weighted=False)
        return lambda values: nr.mix(w, values)
    if comm == "hierarchical_neighbor_allreduce":
        w = _machine_mixing(bf.machine_size())
        bf.set_machine_topology(nx.from_numpy_array(w, create_using=nx.DiGraph),
                                is_weighted=True)
        local = bf.local_size()
        return lambda values: nr.hierarchical(values, local, w)
    return lambda values: [np.mean(values, axis=0)] * n  # allreduce; gradient allreduce


def _mix_parameters(twins, mix):
    with torch.no_grad():
        for params in zip(*(t.parameters() for t in twins)):
            mixed = mix([p.numpy() for p in params])
            for p, value in zip(params, mixed):
                p.copy_(torch.from_numpy(np.asarray(value)))


def _average_gradients(twins):
    for params in zip(*(t.parameters() for t in twins)):
        mean = torch.stack([p.grad for p in params]).mean(dim=0)
        for p in params:
            p.grad = mean.clone()


def _reference_step(kind, twins, twin_optimizers, mix, exchanging):
    """One step() of every twin: local, or with the kind's exchange."""
    if kind == "gradient_allreduce":
        _average_gradients(twins)
    elif kind == "awc" and exchanging:
        _mix_parameters(twins, mix)  # the values sent during the J-th forward pass
    for optimizer in twin_optimizers:
        optimizer.step()
    if kind == "atc" and exchanging:
        _mix_parameters(twins, mix)


def _assert_same(model, twin, what):
    # Read through state_dict(): with overlap_next_forward (ATC's default) the parameters
    # get the combination step() left in flight from their module's next forward pass or
    # from state_dict() (test_optimizer_overlap.py compares both with a waiting step()).
    for (name, p), q in zip(model.state_dict().items(), twin.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-9, atol=1e-12,
                                   msg=lambda m: "{} {}: {}".format(what, name, m))


@pytest.mark.parametrize("base", ["sgd", "adam"])
@pytest.mark.parametrize("steps,pattern", [(1, "local"), (2, "accumulate"), (2, "local"),
                                           (3, "accumulate"), (3, "local"), (3, "split")])
@pytest.mark.parametrize("kind,comm", CASES)
def test_parameters_match_the_reference_after_every_step(kind, comm, steps, pattern, base):
    rank, n = bf.rank(), bf.size()
    mix = _mixer(comm or "allreduce")
    model = _model()
    optimizer = _wrap(kind, _make_optimizer(base, model), model, comm, steps)
    twins = [_model() for _ in range(n)]
    twin_optimizers = [_make_optimizer(base, t) for t in twins]
    stepping = _steps_after(pattern, steps)
    for round_ in range(ROUNDS):
        for pass_ in range(steps):
            last = pass_ == steps - 1
            if pass_ == 0 or pass_ - 1 in stepping:
                for o in [optimizer] + twin_optimizers:
                    o.zero_grad()
            _loss(model, rank, round_, pass_).backward()
            for r, twin in enumerate(twins):
                _loss(twin, r, round_, pass_).backward()
            if pass_ in stepping:
                optimizer.step()
                _reference_step(kind, twins, twin_optimizers, mix, exchanging=last)
                _assert_same(model, twins[rank], "round {} pass {}".format(round_, pass_))
    bf.barrier()


def _requests():
    return bf.engine_counters()["requests"]


@pytest.mark.parametrize("kind", ["atc", "awc", "gradient_allreduce"])
def test_accumulated_passes_launch_the_exchange_from_the_last_pass(kind):
    model = _model()
    optimizer = _wrap(kind, torch.optim.SGD(model.parameters(), lr=0.1), model,
                      "neighbor_allreduce", 3)
    for round_ in range(2):
        optimizer.zero_grad()
        launched = []
        for pass_ in range(3):
            before = _requests()
            _loss(model, bf.rank(), round_, pass_).backward()
            launched.append(_requests() - before)
        before = _requests()
        optimizer.step()
        # 4 parameters, sent during the third pass (ATC and gradient allreduce: its
        # backward; AWC: its forward), nothing more at step().
        assert launched == [0, 0, 4] and _requests() == before, launched


def test_adapt_then_combine_refuses_a_pass_after_the_update():
    model = _model()
    optimizer = bf.DistributedAdaptThenCombineOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model, num_steps_per_communication=2)
    optimizer.zero_grad()
    for pass_ in range(2):
        _loss(model, bf.rank(), 0, pass_).backward()
    with pytest.raises(RuntimeError, match="num_steps_per_communication=2"):
        _loss(model, bf.rank(), 0, 2).backward()
    optimizer.step()
    bf.barrier()


def test_adapt_with_combine_counts_training_forward_passes_only():
    model = _model()
    optimizer = bf.DistributedAdaptWithCombineOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model, num_steps_per_communication=2)
    x = torch.ones(2, 4, dtype=torch.float64)
    counts = []
    for step in range(2):
        before = _requests()
        with torch.no_grad():
            model(x)  # evaluation
        model.eval()
        model(x).sum()  # evaluation mode, gradients enabled: not counted either
        model.train()
        optimizer.zero_grad()
        _loss(model, bf.rank(), step, 0).backward()
        optimizer.step()
        counts.append(_requests() - before)
    assert counts == [0, 4]


def test_adapt_with_combine_without_a_model_counts_steps():
    model = _model()
    optimizer = bf.DistributedAdaptWithCombineOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), None, num_steps_per_communication=2)
    counts = []
    for step in range(4):
        before = _requests()
        optimizer.zero_grad()
        _loss(model, bf.rank(), step, 0).backward()
        optimizer.step()
        counts.append(_requests() - before)
    assert counts == [0, 4, 0, 4]
