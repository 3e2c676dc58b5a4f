"""Adapt-then-combine with overlap_next_forward: step() leaves the exchange in flight and
the next forward pass writes each parameter's combination just before its module runs.

The reference is the same optimizer with overlap_next_forward=False (step() waits), whose
combination the other optimizer tests check against the mixing-matrix product: both run
side by side on identical models and data, and every loss, gradient and parameter must be
equal up to rounding: a neighbor op sums its sources in arrival order, so two identical
calls may differ in the last bit (a wrong or missing combination differs by ~1e-2). A
check that the overlapping optimizer really left its parameters uncombined after step()
keeps the comparison from passing by doing nothing.
"""

import copy

import pytest
import torch
import torch.nn.functional as F

import flock.torch as bf
from flock import topology as tu

COMMUNICATION = ["neighbor_allreduce", "one_peer", "hierarchical_neighbor_allreduce",
                 "allreduce"]


@pytest.fixture(autouse=True)
def default_topology_afterwards():
    yield
    bf.set_topology(tu.ExponentialGraph(bf.size()))


class Net(torch.nn.Module):
    def __init__(self, functional_head=False):
        super().__init__()
        self.functional_head = functional_head
        self.body = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                                        torch.nn.Linear(8, 8), torch.nn.Tanh())
        self.head = torch.nn.Linear(8, 3)
        self.scale = torch.nn.Parameter(torch.ones(3))  # owned by the root module

    def forward(self, x):
        h = self.body(x)
        # functional_head reads head's weight without running head (whose hook writes it)
        out = F.linear(h, self.head.weight, self.head.bias) if self.functional_head else \
            self.head(h)
        return out * self.scale


def _models(seed=0, **kwargs):
    torch.manual_seed(seed + bf.rank())  # ranks differ, so combining changes something
    model = Net(**kwargs).double()
    return model, copy.deepcopy(model)


def _inner(kind, model):
    if kind == "adam":
        return torch.optim.Adam(model.parameters(), lr=0.01)
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)


def _communication(name):
    if name == "hierarchical_neighbor_allreduce":
        bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    return bf.CommunicationType.neighbor_allreduce if name == "one_peer" else \
        bf.CommunicationType[name]


def _optimizers(models, base, communication, steps_per_comm=1):
    kind = _communication(communication)
    return [bf.DistributedAdaptThenCombineOptimizer(
        _inner(base, model), model, communication_type=kind,
        num_steps_per_communication=steps_per_comm, overlap_next_forward=overlap)
        for model, overlap in zip(models, (True, False))]


def _batch(step):
    g = torch.Generator().manual_seed(1000 * step + bf.rank())
    return (torch.randn(5, 6, generator=g, dtype=torch.float64),
            torch.randint(0, 3, (5,), generator=g))


def _set_one_peer(optimizers, schedule):
    send, recv = next(schedule)
    for optimizer in optimizers:
        optimizer.self_weight = 1.0 / (len(recv) + 1)
        optimizer.src_weights = {r: 1.0 / (len(recv) + 1) for r in recv}
        optimizer.dst_weights = list(send)


def _one_step_each():
    """Both models (overlapping, waiting) after one training step on the same batch."""
    models = _models()
    optimizers = _optimizers(models, "sgd", "neighbor_allreduce")
    x, y = _batch(0)
    for model, optimizer in zip(models, optimizers):
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return models, optimizers, x, y


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def _assert_equal(a, b, what):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-12,
                                   msg=lambda m: "{}: tensor {}: {}".format(what, i, m))


@pytest.mark.parametrize("steps_per_comm", [1, 2])
@pytest.mark.parametrize("base", ["sgd", "adam"])
@pytest.mark.parametrize("communication", COMMUNICATION)
def test_overlap_gives_what_waiting_in_step_gives(communication, base, steps_per_comm):
    models = _models()
    optimizers = _optimizers(models, base, communication, steps_per_comm)
    schedule = tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())
    deferred_seen = False
    for step in range(6):
        if communication == "one_peer":
            _set_one_peer(optimizers, schedule)
        x, y = _batch(step)
        losses = []
        for model, optimizer in zip(models, optimizers):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            losses.append(loss.detach())
            loss.backward()
        # The forward passes read the combinations: the overlapping model's pre-hooks
        # wrote them, the waiting model's step() did.
        _assert_equal(losses[:1], losses[1:], "loss of step {}".format(step))
        _assert_equal(_params(models[0]), _params(models[1]), "parameters after forward")
        _assert_equal([p.grad for p in models[0].parameters()],
                      [p.grad for p in models[1].parameters()], "gradients")
        for optimizer in optimizers:
            optimizer.step()
        deferred_seen |= bool(optimizers[0]._flock_deferred)
    assert deferred_seen, "step() never left an exchange in flight"
    # state_dict() writes what the last step left in flight
    _assert_equal(list(models[0].state_dict().values()),
                  list(models[1].state_dict().values()), "state_dict after the last step")


@pytest.mark.skipif(bf.size() < 2, reason="one rank's combination is its own value")
def test_step_really_leaves_the_combination_to_the_forward_pass():
    models = _models()
    overlapping, waiting = _optimizers(models, "sgd", "neighbor_allreduce")
    x, y = _batch(0)
    for model, optimizer in zip(models, (overlapping, waiting)):
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    raw = _params(models[0])  # adapted, not yet combined
    assert any((a - b).abs().max() > 1e-6 for a, b in zip(raw, _params(models[1])))
    overlapping.synchronize()  # after step(): writes the combination, no further update
    _assert_equal(_params(models[0]), _params(models[1]), "after synchronize()")
    overlapping.synchronize()
    _assert_equal(_params(models[0]), _params(models[1]), "after a second synchronize()")


def test_evaluation_and_load_state_dict_see_the_combination():
    models, optimizers, x, y = _one_step_each()
    with torch.no_grad():
        outputs = [model.eval()(x) for model in models]
    _assert_equal(outputs[:1], outputs[1:], "evaluation output")
    for model, optimizer in zip(models, optimizers):
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    saved = {k: v.clone() for k, v in models[1].state_dict().items()}
    for value in saved.values():
        value.add_(1.0)
    models[0].load_state_dict(saved)  # the pending combination must not overwrite it
    _assert_equal(_params(models[0]), list(saved.values()), "loaded parameters")
    with torch.no_grad():
        models[0](x)
    _assert_equal(_params(models[0]), list(saved.values()), "after the next forward pass")


def test_a_weight_read_outside_its_module_is_refused_then_works_without_overlap():
    model = _models(functional_head=True)[0]
    optimizer = bf.DistributedAdaptThenCombineOptimizer(_inner("sgd", model), model)
    x, y = _batch(0)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
    with pytest.raises(RuntimeError, match=r"head\.(weight|bias).*overlap_next_forward=False"):
        F.cross_entropy(model(x), y).backward()
    model2 = _models(seed=1, functional_head=True)[0]
    optimizer2 = bf.DistributedAdaptThenCombineOptimizer(_inner("sgd", model2), model2,
                                                         overlap_next_forward=False)
    for step in range(2):
        optimizer2.zero_grad()
        F.cross_entropy(model2(x), y).backward()
        optimizer2.step()
    assert not optimizer2._flock_deferred


def test_parameters_no_forward_reached_are_combined_by_the_next_step():
    models, optimizers, x, y = _one_step_each()
    for model, optimizer in zip(models, optimizers):
        optimizer.zero_grad()
        model.body(x).sum().backward()  # head and scale are not reached
        optimizer.step()
    _assert_equal(list(models[0].state_dict().values()),
                  list(models[1].state_dict().values()), "after a partial pass")
