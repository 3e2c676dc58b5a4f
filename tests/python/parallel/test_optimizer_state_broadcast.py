"""broadcast_optimizer_state with every kind of torch optimizer state.

The root (the last rank) trains with its own hyperparameters and data; rank r
trains r % 2 steps, so some ranks have no state at all. Every rank rebuilds the
root's optimizer alone (a twin: same seeds, hyperparameters, data and
schedule) as the reference: after the broadcast its state_dict() must equal
the twin's entry for entry, with the same types (tensors incl. 0-d step
tensors, ints, floats, None, tuples), and a few more steps on data common to
all ranks must keep every rank equal to the twin — with a scheduler attached
before the broadcast still driving the learning rate.
"""

import pytest
import torch

import flock.torch as bf

OPTIMIZERS = {
    "adam": lambda groups, lr: torch.optim.Adam(groups, lr=lr, betas=(0.8, 0.95)),
    "adam_amsgrad": lambda groups, lr: torch.optim.Adam(groups, lr=lr, amsgrad=True),
    "adamw": lambda groups, lr: torch.optim.AdamW(groups, lr=lr, weight_decay=0.05),
    "adagrad": lambda groups, lr: torch.optim.Adagrad(groups, lr=lr, lr_decay=0.01),
    "rmsprop": lambda groups, lr: torch.optim.RMSprop(groups, lr=lr, centered=True,
                                                      momentum=0.5),
    "sgd": lambda groups, lr: torch.optim.SGD(groups, lr=lr),
    "sgd_momentum": lambda groups, lr: torch.optim.SGD(groups, lr=lr, momentum=0.9,
                                                       nesterov=True, weight_decay=1e-3),
}
SCHEDULERS = {
    None: None,
    "step": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "lambda": lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (1 + epoch)),
}
ROOT_STEPS = 2


def _root():
    return bf.size() - 1


def _model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def _setup(kind, scheduler, rank):
    """Model, optimizer (two groups, hyperparameters that depend on rank) and scheduler."""
    model = _model()
    lr = 0.01 * (rank + 1)
    groups = [{"params": model[0].parameters()},
              {"params": model[2].parameters(), "lr": lr / 2}]
    optimizer = OPTIMIZERS[kind](groups, lr)
    return model, optimizer, (SCHEDULERS[scheduler](optimizer) if scheduler else None)


def _train(model, optimizer, scheduler, seed, steps):
    for step in range(steps):
        g = torch.Generator().manual_seed(1000 * seed + step)
        optimizer.zero_grad()
        (model(torch.randn(6, 4, generator=g)) - 1).pow(2).mean().backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()


def _stepped_like_the_root(kind, scheduler):
    """What the root has before the broadcast, rebuilt on this rank alone."""
    model, optimizer, schedule = _setup(kind, scheduler, _root())
    _train(model, optimizer, schedule, _root(), ROOT_STEPS)
    if ROOT_STEPS:  # plain Python entries travel too, with their types
        optimizer.state[model[0].weight].update(note=1.5, count=3, nothing=None)
    return model, optimizer, schedule


def _assert_same_value(got, expected, where):
    assert type(got) is type(expected), "{}: {!r} vs {!r}".format(where, got, expected)
    if isinstance(expected, torch.Tensor):
        assert got.dtype == expected.dtype and got.shape == expected.shape, where
        assert torch.equal(got, expected), "{}: {} vs {}".format(where, got, expected)
    else:
        assert got == expected, "{}: {!r} vs {!r}".format(where, got, expected)


def _assert_same_state(optimizer, twin, what):
    got, expected = optimizer.state_dict(), twin.state_dict()
    assert got["param_groups"] == expected["param_groups"], what
    assert sorted(got["state"]) == sorted(expected["state"]), what
    for index, entries in expected["state"].items():
        assert sorted(got["state"][index]) == sorted(entries), (what, index)
        for key, value in entries.items():
            _assert_same_value(got["state"][index][key], value, "{} {}.{}".format(what, index, key))


def _assert_same_parameters(model, twin, what):
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.equal(p, q), "{}: {}".format(what, name)


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS, key=str))
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_every_rank_gets_the_roots_optimizer_and_keeps_training_like_it(kind, scheduler):
    rank, root = bf.rank(), _root()
    if rank == root:
        model, optimizer, schedule = _stepped_like_the_root(kind, scheduler)
    else:
        model, optimizer, schedule = _setup(kind, scheduler, rank)
        _train(model, optimizer, schedule, rank, rank % 2)  # rank 0: no state at all
    bf.broadcast_optimizer_state(optimizer, root_rank=root)
    bf.broadcast_parameters(model.state_dict(), root_rank=root)
    if schedule is not None:  # the scheduler's own state, as docs/training.md says
        schedule.load_state_dict(bf.broadcast_object(schedule.state_dict(), root_rank=root,
                                                     name="scheduler"))
    twin_model, twin, twin_schedule = _stepped_like_the_root(kind, scheduler)
    _assert_same_state(optimizer, twin, "after the broadcast")
    _assert_same_parameters(model, twin_model, "after the broadcast")
    lr_before = optimizer.param_groups[0]["lr"]
    for step in range(3):  # the same data on every rank
        _train(model, optimizer, schedule, 77 + step, 1)
        _train(twin_model, twin, twin_schedule, 77 + step, 1)
        _assert_same_state(optimizer, twin, "step {}".format(step))
        _assert_same_parameters(model, twin_model, "step {}".format(step))
    if schedule is not None:
        assert optimizer.param_groups[0]["lr"] < lr_before, "the scheduler stopped driving"


def test_an_empty_root_state_empties_the_others():
    rank, root = bf.rank(), _root()
    model, optimizer, _ = _setup("adam", None, rank)
    if rank != root:
        _train(model, optimizer, None, rank, 2)
    bf.broadcast_optimizer_state(optimizer, root_rank=root)
    _, twin, _ = _setup("adam", None, root)
    _assert_same_state(optimizer, twin, "empty root")
    assert not optimizer.state_dict()["state"]


@pytest.mark.parametrize("wrapper", ["gradient_allreduce", "awc", "atc"])
def test_a_distributed_optimizer_takes_the_roots_state_and_keeps_training(wrapper):
    rank, root = bf.rank(), _root()
    model, optimizer, _ = _setup("adam", None, rank)
    if rank == root:
        model, optimizer, _ = _stepped_like_the_root("adam", None)
    if wrapper == "gradient_allreduce":
        optimizer = bf.DistributedGradientAllreduceOptimizer(optimizer, model)
    else:
        wrap = (bf.DistributedAdaptThenCombineOptimizer if wrapper == "atc"
                else bf.DistributedAdaptWithCombineOptimizer)
        optimizer = wrap(optimizer, model, communication_type="allreduce")
    bf.broadcast_optimizer_state(optimizer, root_rank=root)
    bf.broadcast_parameters(model.state_dict(), root_rank=root)
    twin_model, twin, _ = _stepped_like_the_root("adam", None)
    _assert_same_state(optimizer, twin, "after the broadcast")
    for step in range(2):  # equal models and data: averaging changes nothing
        _train(model, optimizer, None, 55 + step, 1)
        _train(twin_model, twin, None, 55 + step, 1)
        for p, q in zip(model.parameters(), twin_model.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


def test_broadcast_object_returns_the_roots_object():
    root = _root()
    value = {"rank": bf.rank(), "betas": (0.5, 0.25), "none": None, "t": torch.arange(3.0)}
    got = bf.broadcast_object(value, root_rank=root)
    assert got["rank"] == root and got["betas"] == (0.5, 0.25) and got["none"] is None
    assert torch.equal(got["t"], torch.arange(3.0))
    if bf.rank() == root:
        assert got is value
