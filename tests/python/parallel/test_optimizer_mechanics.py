"""What a PyTorch user expects of the wrapped optimizers, and the utilities.

Parameters keep their storage; state_dict round trips; the wrapped object is
still the optimizer it was (class, state, hyperparameters); communication
starts during the backward pass (gradient allreduce, ATC) or forward pass
(AWC); num_steps_per_communication = 2 communicates every second step;
synchronize() + skip_synchronize() allow clipping averaged gradients;
broadcast_parameters, allreduce_parameters and broadcast_optimizer_state;
misuse gets clear errors.
"""

import io

import pytest
import torch

import flock.torch as bf

WRAPPERS = {
    "gradient_allreduce": bf.DistributedGradientAllreduceOptimizer,
    "awc": bf.DistributedAdaptWithCombineOptimizer,
    "atc": bf.DistributedAdaptThenCombineOptimizer,
}


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3),
                               torch.nn.Tanh(), torch.nn.Linear(3, 1))


def _batch(step):
    g = torch.Generator().manual_seed(100 * bf.rank() + step)
    return torch.randn(4, 6, generator=g)


def _train_step(model, optimizer, step):
    optimizer.zero_grad()
    model(_batch(step)).pow(2).mean().backward()
    optimizer.step()


def _identical_on_every_rank(tensors, name):
    flat = torch.cat([t.detach().reshape(-1).double() for t in tensors])
    rows = bf.allgather(flat.reshape(1, -1), name=name)
    return bool((rows == rows[0]).all())


@pytest.mark.parametrize("kind", sorted(WRAPPERS))
def test_the_wrapped_object_is_still_the_optimizer(kind):
    model = _model()
    inner = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9))
    optimizer = WRAPPERS[kind](inner, model)
    assert optimizer is inner and isinstance(optimizer, torch.optim.Adam)
    assert optimizer.param_groups[0]["betas"] == (0.8, 0.9)
    storage = [p.data_ptr() for p in model.parameters()]
    for step in range(3):
        _train_step(model, optimizer, step)
    assert [p.data_ptr() for p in model.parameters()] == storage, "parameters were replaced"
    torch.save(model, io.BytesIO())  # the model still pickles whole
    state = optimizer.state_dict()
    assert len(state["state"]) == len(list(model.parameters()))
    # A fresh optimizer loads the state and takes the same next step.
    twin = _model()
    twin.load_state_dict(model.state_dict())
    twin_opt = WRAPPERS[kind](torch.optim.Adam(twin.parameters(), lr=0.01), twin)
    twin_opt.load_state_dict(state)
    assert twin_opt.param_groups[0]["betas"] == (0.8, 0.9)
    for m, o in ((model, optimizer), (twin, twin_opt)):
        _train_step(m, o, 99)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q)
    # A learning-rate scheduler drives the wrapped optimizer as usual.
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    _train_step(model, optimizer, 100)
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.005)


@pytest.mark.parametrize("kind", ["gradient_allreduce", "atc"])
def test_communication_starts_before_backward_ends(kind):
    model = _model()
    optimizer = WRAPPERS[kind](torch.optim.SGD(model.parameters(), lr=0.01), model)
    seen = {}
    hidden = model[0](_batch(0))
    # Runs once the gradient reaches the first layer's output: the later layers'
    # parameters have their gradients by then, the first layer's not yet.
    def observe(_grad):
        seen.setdefault("requests", bf.engine_counters()["requests"])

    hidden.register_hook(observe)
    before = bf.engine_counters()["requests"]
    out = model[4](model[3](model[2](model[1](hidden))))
    optimizer.zero_grad()
    out.pow(2).mean().backward()
    after = bf.engine_counters()["requests"]
    optimizer.step()
    assert seen["requests"] - before >= 4, "no communication launched during backward"
    assert after - before == 6  # one per parameter
    bf.barrier()


def test_adapt_with_combine_sends_during_the_forward_pass():
    model = _model()
    optimizer = bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                        model)
    before = bf.engine_counters()["requests"]
    loss = model(_batch(0)).pow(2).mean()
    assert bf.engine_counters()["requests"] - before == 6  # every parameter on its way
    with torch.no_grad():
        model(_batch(1))  # evaluation passes launch nothing
    assert bf.engine_counters()["requests"] - before == 6
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


@pytest.mark.parametrize("kind", sorted(WRAPPERS))
def test_two_steps_per_communication(kind):
    model = _model()
    optimizer = WRAPPERS[kind](torch.optim.SGD(model.parameters(), lr=0.01), model,
                               num_steps_per_communication=2)
    counts = []
    for step in range(6):
        before = bf.engine_counters()["requests"]
        if kind == "gradient_allreduce":  # accumulation: two backward passes per step()
            optimizer.zero_grad()
            for k in range(2):
                model(_batch(10 * step + k)).pow(2).mean().backward()
            optimizer.step()
        else:
            _train_step(model, optimizer, step)
        counts.append(bf.engine_counters()["requests"] - before)
    expected = [6] * 6 if kind == "gradient_allreduce" else [0, 6] * 3
    assert counts == expected


def test_gradient_accumulation_averages_the_sum_of_the_passes():
    # The local sum comes from an unwrapped twin: the wrapped model's p.grad is being
    # averaged in place from the second backward pass on, so reading it then would race.
    twin = _model()
    for k in range(2):
        twin(_batch(k)).pow(2).mean().backward()
    local = [p.grad.clone() for p in twin.parameters()]
    model = _model()
    optimizer = bf.DistributedGradientAllreduceOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                                         model, num_steps_per_communication=2)
    optimizer.zero_grad()
    for k in range(2):
        model(_batch(k)).pow(2).mean().backward()
    optimizer.synchronize()
    for p, mine in zip(model.parameters(), local):
        expected = bf.allreduce(mine, name="accumulated.reference")
        torch.testing.assert_close(p.grad, expected)
    with optimizer.skip_synchronize():
        optimizer.step()


def test_clipping_between_synchronize_and_step():
    model = _model()
    optimizer = bf.DistributedGradientAllreduceOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                                         model)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.zero_grad()
    (1000 * model(_batch(0)).pow(2).mean()).backward()
    optimizer.synchronize()
    assert _identical_on_every_rank([p.grad for p in model.parameters()], "clip.avg")
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    requests = bf.engine_counters()["requests"]
    with optimizer.skip_synchronize():
        optimizer.step()
    assert bf.engine_counters()["requests"] == requests  # step did not communicate again
    moved = torch.cat([(p.detach() - b).reshape(-1) for p, b in zip(model.parameters(), before)])
    assert moved.norm().item() == pytest.approx(0.5, rel=1e-4)


def test_misuse_is_refused_clearly():
    model = _model()
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        bf.DistributedAdaptWithCombineOptimizer(model, model)
    with pytest.raises(ValueError, match="num_steps_per_communication"):
        bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model,
                                                num_steps_per_communication=0)
    with pytest.raises(ValueError, match="communication_type"):
        bf.DistributedAdaptThenCombineOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model,
                                                communication_type="gossip")
    wrapped = bf.DistributedGradientAllreduceOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                       model)
    with pytest.raises(ValueError, match="already"):
        bf.DistributedGradientAllreduceOptimizer(wrapped, model)
    # Gradient allreduce: a second backward pass before step() (J = 1).
    model(_batch(0)).sum().backward()
    with pytest.raises(RuntimeError, match="num_steps_per_communication"):
        model(_batch(1)).sum().backward()
    wrapped.step()
    del wrapped  # its hooks go quiet with it
    # ATC: each parameter is updated when its J-th gradient is ready, so step() comes next.
    atc = bf.DistributedAdaptThenCombineOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model)
    model(_batch(2)).sum().backward()
    with pytest.raises(RuntimeError, match="had updated and sent it"):
        model(_batch(3)).sum().backward()
    atc.step()
    bf.barrier()


def test_broadcast_parameters_makes_every_rank_identical():
    model = _model(seed=bf.rank())  # different on every rank
    bf.broadcast_parameters(model.state_dict(), root_rank=bf.size() - 1)
    assert _identical_on_every_rank(list(model.state_dict().values()), "bp.check")
    reference = _model(seed=bf.size() - 1)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q)
    # named_parameters() and plain lists work too.
    model = _model(seed=bf.rank())
    bf.broadcast_parameters(model.named_parameters(), root_rank=0)
    assert _identical_on_every_rank(list(model.parameters()), "bp.check2")


def test_allreduce_parameters_averages():
    model = torch.nn.BatchNorm1d(3)
    with torch.no_grad():
        model.weight.fill_(bf.rank())
    model.num_batches_tracked.fill_(bf.rank())
    bf.allreduce_parameters(model.state_dict())
    assert torch.allclose(model.weight, torch.full((3,), (bf.size() - 1) / 2))
    assert model.num_batches_tracked.item() == bf.size() - 1  # integers: the maximum


def test_broadcast_optimizer_state_of_a_stateful_optimizer():
    model = _model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01 * (bf.rank() + 1))
    if bf.rank() == 0:  # only the root has stepped: the others have no state at all
        for step in range(3):
            optimizer.zero_grad()
            model(_batch(step)).pow(2).mean().backward()
            optimizer.step()
    bf.broadcast_optimizer_state(optimizer, root_rank=0)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01)
    state = optimizer.state_dict()["state"]
    assert len(state) == 6 and all(s["step"].item() == 3 for s in state.values())
    assert _identical_on_every_rank([s["exp_avg"] for s in state.values()], "bos.check")


@pytest.mark.parametrize("kind", sorted(WRAPPERS))
def test_a_scheduler_made_before_wrapping_still_steps_the_distributed_optimizer(kind):
    model = _model()
    inner = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(inner, step_size=1, gamma=0.5)
    optimizer = WRAPPERS[kind](inner, model)
    before = bf.engine_counters()["requests"]
    _train_step(model, optimizer, 0)
    assert bf.engine_counters()["requests"] - before == 6, "step() did not communicate"
    scheduler.step()  # no "scheduler before optimizer" warning: the step was counted
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


@pytest.mark.parametrize("kind", sorted(WRAPPERS))
def test_synchronize_then_step_communicates_once(kind):
    model = _model()
    optimizer = WRAPPERS[kind](torch.optim.SGD(model.parameters(), lr=0.1), model)
    reference = _model()
    reference.load_state_dict(model.state_dict())
    ref_opt = WRAPPERS[kind](torch.optim.SGD(reference.parameters(), lr=0.1), reference)
    for m, o, explicit in ((model, optimizer, True), (reference, ref_opt, False)):
        before = bf.engine_counters()["requests"]
        o.zero_grad()
        m(_batch(5)).pow(2).mean().backward()
        if explicit:
            o.synchronize()
            o.synchronize()  # a second call does nothing
        o.step()  # without skip_synchronize: must not communicate or update twice
        assert bf.engine_counters()["requests"] - before == 6
    # state_dict(): the reference's step() may have left its combination in flight
    for p, q in zip(model.state_dict().values(), reference.state_dict().values()):
        torch.testing.assert_close(p, q)


def test_two_optimizers_at_once_and_a_newer_one_takes_over():
    generator, critic = _model(1), _model(2)
    g_opt = bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(generator.parameters(), lr=0.1),
                                                    generator)
    c_opt = bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(critic.parameters(), lr=0.1),
                                                    critic)
    # The critic's forward runs the generator's too: both in flight, distinct names.
    for opt in (g_opt, c_opt):
        opt.zero_grad()
    critic(generator(_batch(0)).repeat(1, 6)).mean().backward()
    g_opt.step()
    c_opt.step()
    # A second optimizer over the generator while the first is still referenced: the old
    # one's hooks go quiet (one launch per parameter, not two).
    newer = bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(generator.parameters(), lr=0.1),
                                                    generator)
    before = bf.engine_counters()["requests"]
    _train_step(generator, newer, 1)
    assert bf.engine_counters()["requests"] - before == 6
    assert g_opt is not None


def test_wrapping_inside_no_grad():
    model = _model()
    with torch.no_grad():
        optimizer = bf.DistributedGradientAllreduceOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1), model)
    before = bf.engine_counters()["requests"]
    _train_step(model, optimizer, 0)
    assert bf.engine_counters()["requests"] - before == 6
