"""flock.elastic in one process: the elastic sampler's partition and resize, State and
TorchState commit/restore/resume (flockrun --elastic's job side). The commit files
themselves: test_elastic_commits.py.
"""

import json
import os

import pytest
import torch

from flock import basics
from flock.elastic import HostsUpdatedInterrupt, State
from flock.elastic import _state as elastic_state
from flock.errors import FlockElasticError
from flock.torch._elastic_sampler import ElasticSampler, partition
from flock.torch.elastic import TorchState


def commit_names(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith("commit-"))

# partition -----------------------------------------------------------------------------


def expected_rounds(n, world, batch):
    """Independent count: full rounds, plus one short round unless its samples are
    too few for every rank (then they go into the last full round)."""
    full, tail = divmod(n, world * batch)
    if tail == 0 or (tail < world and full > 0):
        return full
    return full + 1


@pytest.mark.parametrize("world", range(1, 7))
@pytest.mark.parametrize("batch", range(1, 6))
def test_partition_covers_the_rest_once_evenly(world, batch):
    for n in range(61):
        rest = [1000 + 7 * i for i in range(n)]
        rounds = partition(rest, world, batch)
        taken = [i for round_ in rounds for b in round_ for i in b]
        assert sorted(taken) == rest, (n, world, batch)
        assert len(rounds) == expected_rounds(n, world, batch), (n, world, batch)
        for round_ in rounds:
            sizes = [len(b) for b in round_]
            assert len(sizes) == world and max(sizes) - min(sizes) <= 1, (n, sizes)
            if n >= world:
                assert min(sizes) >= 1, (n, world, batch, sizes)


# ElasticSampler ---------------------------------------------------------------------------


class FakeWorld:
    """flock.basics' size/rank/is_initialized, set by the test."""

    def __init__(self, monkeypatch, size):
        self.size, self.rank = size, 0
        monkeypatch.setattr(basics, "size", lambda: self.size)
        monkeypatch.setattr(basics, "rank", lambda: self.rank)
        monkeypatch.setattr(basics, "is_initialized", lambda: True)

    def batches_of_every_rank(self, sampler, steps=None):
        """{rank: its batches}: what each rank's own sampler would yield."""
        out = {}
        for self.rank in range(self.size):
            out[self.rank] = list(sampler)[:steps]
        self.rank = 0
        return out


def permutation(n, seed):
    generator = torch.Generator()
    generator.manual_seed(seed)
    return torch.randperm(n, generator=generator).tolist()


def flat(batches_by_rank):
    return [i for batches in batches_by_rank.values() for b in batches for i in b]


@pytest.mark.parametrize("n, batch, steps", [(50, 3, 4), (47, 2, 5), (31, 4, 1), (9, 1, 3)])
def test_sampler_resized_mid_epoch_sees_each_sample_once(monkeypatch, n, batch, steps):
    fake = FakeWorld(monkeypatch, 3)
    sampler = ElasticSampler(range(n), batch, shuffle=True, seed=5)
    before = fake.batches_of_every_rank(sampler, steps)
    assert len({len(b) for b in before.values()}) == 1
    for _ in range(steps):
        sampler.record_batch()
    state = sampler.state_dict()
    assert state == {"epoch": 0, "processed": len(flat(before)), "seed": 5}
    resumed = ElasticSampler(range(n), batch, shuffle=True, seed=0)
    resumed.load_state_dict(state)
    fake.size = 2
    after = fake.batches_of_every_rank(resumed)
    assert len(after[0]) == len(after[1]) == len(resumed)
    order = permutation(n, 5)
    assert sorted(flat(before)) == sorted(order[:state["processed"]])
    assert sorted(flat(before) + flat(after)) == list(range(n))


def test_sampler_epochs_shuffle_and_identity(monkeypatch):
    fake = FakeWorld(monkeypatch, 1)
    shuffled = ElasticSampler(list(range(40)), 4, shuffle=True, seed=3)
    epoch0 = flat(fake.batches_of_every_rank(shuffled))
    shuffled.set_epoch(1)
    epoch1 = flat(fake.batches_of_every_rank(shuffled))
    assert epoch0 == permutation(40, 3) and epoch1 == permutation(40, 4)
    assert epoch0 != epoch1 and sorted(epoch1) == list(range(40))
    plain = ElasticSampler(list(range(40)), 4, shuffle=False)
    plain.set_epoch(1)
    assert flat(fake.batches_of_every_rank(plain)) == list(range(40))


def test_sampler_set_epoch_restarts_after_progress(monkeypatch):
    fake = FakeWorld(monkeypatch, 2)
    sampler = ElasticSampler(list(range(20)), 2, shuffle=False)
    list(sampler)
    sampler.record_batch()
    sampler.set_epoch(1)
    assert sampler.state_dict()["processed"] == 0
    assert sorted(flat(fake.batches_of_every_rank(sampler))) == list(range(20))


def test_sampler_record_past_the_end_and_bad_batch_size(monkeypatch):
    FakeWorld(monkeypatch, 2)
    sampler = ElasticSampler(list(range(4)), 2, shuffle=False)
    sampler.record_batch()
    with pytest.raises(RuntimeError, match="no batch left"):
        sampler.record_batch()
    with pytest.raises(ValueError, match="batch_size"):
        ElasticSampler([1], 0)


# State and TorchState ------------------------------------------------------------------------


@pytest.fixture
def flock_up(monkeypatch):
    """One rank without MPI: an MPI_Init in pytest's own process would leave OpenMPI's
    singleton settings in the environment of every mpirun the later tests start (they
    then exit 1 without a word). share() with one rank returns rank 0's data."""
    monkeypatch.setattr(basics, "size", lambda: 1)
    monkeypatch.setattr(basics, "rank", lambda: 0)
    monkeypatch.setattr(basics, "is_initialized", lambda: True)
    monkeypatch.setattr(elastic_state, "share", lambda code, data, name: (
        code, memoryview(b"" if data is None else data).cast("B")))
    monkeypatch.setattr(elastic_state, "share_blocks", lambda buffers, name: None)


@pytest.fixture
def no_elastic_dir(monkeypatch, flock_up):
    monkeypatch.delenv("FLOCK_ELASTIC_DIR", raising=False)
    monkeypatch.delenv("FLOCK_ELASTIC_LAUNCH", raising=False)


@pytest.fixture
def elastic_dir(monkeypatch, tmp_path, flock_up):
    monkeypatch.setenv("FLOCK_ELASTIC_DIR", str(tmp_path))
    monkeypatch.setenv("FLOCK_ELASTIC_LAUNCH", "3")
    return tmp_path


class Counter:
    def __init__(self):
        self.count = 0

    def state_dict(self):
        return {"count": self.count}

    def load_state_dict(self, state):
        self.count = state["count"]


def test_state_commit_and_restore_plain_values(no_elastic_dir):
    state = State(step=1, data=[1, 2], name="a")
    state.restore()  # before any commit: nothing changes
    assert (state.step, state.data) == (1, [1, 2])
    state.commit()
    state.step, state.name = 9, "b"
    state.data.append(3)
    state.restore()
    assert (state.step, state.data, state.name, state.commits) == (1, [1, 2], "a", 1)


def test_state_restores_a_stateful_value_in_place(no_elastic_dir):
    counter = Counter()
    counter.count = 4
    state = State(counter=counter)
    state.commit()
    counter.count = 10
    state.restore()
    assert state.counter is counter and counter.count == 4


@pytest.mark.parametrize("name", ["commits", "_x", "commit", "resumed_from", "restore"])
def test_reserved_names_are_refused(no_elastic_dir, name):
    with pytest.raises(ValueError, match=repr(name)):
        State(**{name: 1})


def test_commit_on_disk_and_resume(elastic_dir):
    state = State(step=7, data={"lr": 0.5})
    state.commit()
    assert commit_names(elastic_dir) == ["commit-00000001.flock"]
    fresh = State(step=0, data={})
    assert fresh._resume() is True
    assert (fresh.step, fresh.data) == (7, {"lr": 0.5})
    assert fresh.resumed_from["world_size"] == 1 and fresh.resumed_from["launch"] == 3


def test_resume_without_a_commit_keeps_the_values(elastic_dir):
    state = State(step=2)
    assert state._resume() is False and state.step == 2
    state.step = 5
    state.restore()
    assert state.step == 2


def write_control(directory, launch, reason="x"):
    with open(os.path.join(directory, "control.json"), "w", encoding="utf-8") as handle:
        json.dump({"launch": launch, "reason": reason}, handle)


def test_reset_request_interrupts_after_the_commit_is_saved(elastic_dir):
    write_control(elastic_dir, 3, "host b is gone")
    state = State(step=11)
    with pytest.raises(HostsUpdatedInterrupt, match="host b is gone"):
        state.commit()
    assert commit_names(elastic_dir) == ["commit-00000001.flock"]
    fresh = State(step=0)
    assert fresh._resume() and fresh.step == 11
    with pytest.raises(HostsUpdatedInterrupt):
        state.check_host_updates()


def test_reset_request_of_another_launch_is_ignored(elastic_dir):
    write_control(elastic_dir, 2)
    state = State(step=1)
    state.commit()
    state.check_host_updates()
    assert state.commits == 1


def test_failed_commit_write_is_an_error_on_commit(elastic_dir):
    State(step=1).commit()
    (elastic_dir / ".commit-00000002.flock.tmp").mkdir()
    with pytest.raises(FlockElasticError, match="is kept"):
        State(step=2).commit()


def test_commit_into_a_path_under_a_file_is_an_elastic_error(monkeypatch, tmp_path, flock_up):
    (tmp_path / "file").write_text("a regular file")
    monkeypatch.setenv("FLOCK_ELASTIC_DIR", str(tmp_path / "file" / "sub"))
    with pytest.raises(FlockElasticError, match="cannot write commit"):
        State(step=1).commit()


def model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer


def train_step(model, optimizer):
    optimizer.zero_grad()
    model(torch.randn(4, 3)).pow(2).sum().backward()
    optimizer.step()


def momentum_buffers(optimizer):
    return [optimizer.state[p]["momentum_buffer"].clone()
            for g in optimizer.param_groups for p in g["params"]]


@pytest.mark.parametrize("on_disk", [False, True])
def test_torch_state_restores_weights_and_momentum(monkeypatch, tmp_path, flock_up, on_disk):
    monkeypatch.delenv("FLOCK_ELASTIC_DIR", raising=False)
    if on_disk:
        monkeypatch.setenv("FLOCK_ELASTIC_DIR", str(tmp_path))
    model, optimizer = model_and_optimizer()
    train_step(model, optimizer)
    state = TorchState(model, optimizer, epoch=1)
    state.commit()
    weights = [t.clone() for t in model.state_dict().values()]
    buffers = momentum_buffers(optimizer)
    train_step(model, optimizer)
    with torch.no_grad():
        model.weight.add_(1.0)
    state.epoch = 2
    assert not torch.equal(model.weight, weights[0])
    state.restore()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), weights))
    assert all(torch.equal(a, b) for a, b in zip(momentum_buffers(optimizer), buffers))
    assert state.epoch == 1
    if on_disk:
        other = torch.nn.Linear(3, 2)
        other_optimizer = torch.optim.SGD(other.parameters(), lr=0.5, momentum=0.9)
        fresh = TorchState(other, other_optimizer, epoch=0)
        assert fresh._resume() and fresh.epoch == 1
        assert all(torch.equal(a, b) for a, b in zip(other.state_dict().values(), weights))
        assert all(torch.equal(a, b) for a, b in zip(momentum_buffers(other_optimizer), buffers))
        assert other_optimizer.param_groups[0]["lr"] == 0.1


class Net(torch.nn.Module):
    """Parameters, a batch norm (an int64 0-d counter among its buffers) and a
    bfloat16 buffer: the kinds of tensor a state_dict holds."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)
        self.norm = torch.nn.BatchNorm1d(4)
        self.register_buffer("scale", torch.ones(2, dtype=torch.bfloat16))

    def forward(self, x):
        return self.norm(self.linear(x)) * self.scale[0].float()


def trained_net(seed):
    torch.manual_seed(seed)
    net = Net()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(2):
        optimizer.zero_grad()
        net(torch.randn(8, 3)).pow(2).sum().backward()
        optimizer.step()
    with torch.no_grad():
        net.scale.fill_(seed + 0.5)
    return net, optimizer


def optimizer_tensors(optimizer):
    return [t.clone() for entry in optimizer.state_dict()["state"].values()
            for t in entry.values() if isinstance(t, torch.Tensor)]


def same_tensors(a, b):
    return len(a) == len(b) and all(x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b))


def test_resume_reads_into_the_live_model_and_optimizer(elastic_dir):
    net, optimizer = trained_net(1)
    extra = torch.arange(6.0).reshape(2, 3).t()  # not contiguous: a value, copied
    TorchState(net, optimizer, step=3, extra=extra).commit()
    model_expected = [t.clone() for t in net.state_dict().values()]
    optimizer_expected = optimizer_tensors(optimizer)

    fresh, fresh_optimizer = trained_net(2)  # other weights, its own optimizer state
    addresses = [t.data_ptr() for t in fresh.state_dict().values()]
    state = TorchState(fresh, fresh_optimizer, step=0, extra=None)
    assert state._resume() and state.step == 3
    assert torch.equal(state.extra, extra)
    assert same_tensors(list(fresh.state_dict().values()), model_expected)
    assert [t.data_ptr() for t in fresh.state_dict().values()] == addresses  # in place
    assert same_tensors(optimizer_tensors(fresh_optimizer), optimizer_expected)
    assert fresh.norm.num_batches_tracked.item() == 2


def test_resume_after_a_damaged_newest_commit_takes_the_previous_one(elastic_dir, capfd):
    net, optimizer = trained_net(1)
    state = TorchState(net, optimizer, step=1)
    state.commit()
    expected = [t.clone() for t in net.state_dict().values()]
    with torch.no_grad():
        net.linear.weight.add_(1.0)
    state.step = 2
    state.commit()
    newest = os.path.join(elastic_dir, commit_names(elastic_dir)[-1])
    with open(newest, "r+b") as handle:  # the data's first bytes: the first weight's
        handle.seek(-(sum(t.numel() * t.element_size() for t in expected) +
                      sum(t.numel() * t.element_size() for t in optimizer_tensors(optimizer))),
                    os.SEEK_END)
        handle.write(b"\xff" * 8)
    fresh, fresh_optimizer = trained_net(2)
    resumed = TorchState(fresh, fresh_optimizer, step=0)
    assert resumed._resume() and resumed.step == 1
    assert same_tensors(list(fresh.state_dict().values()), expected)
    assert "checksum of its data" in capfd.readouterr().err


def test_resume_into_a_model_of_other_shapes_is_a_clear_error(elastic_dir):
    TorchState(torch.nn.Linear(3, 4)).commit()
    other = torch.nn.Linear(3, 5)
    with pytest.raises(FlockElasticError, match="(?s)does not fit.*size mismatch for weight"):
        TorchState(other)._resume()


def test_restore_after_resume_reads_the_commit_again(elastic_dir):
    net, optimizer = trained_net(1)
    TorchState(net, optimizer, step=4).commit()
    expected = [t.clone() for t in net.state_dict().values()]
    state = TorchState(net, optimizer, step=0)
    assert state._resume()
    with torch.no_grad():
        net.linear.weight.zero_()
    state.step = 9
    state.restore()
    assert state.step == 4 and same_tensors(list(net.state_dict().values()), expected)


def test_sync_without_other_ranks_keeps_the_state(no_elastic_dir):
    net, optimizer = trained_net(1)
    expected = [t.clone() for t in net.state_dict().values()]
    state = TorchState(net, optimizer, step=5)
    state.sync()
    assert state.step == 5 and same_tensors(list(net.state_dict().values()), expected)
