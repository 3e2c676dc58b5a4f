"""TorchState across ranks: a resume reads rank 0's commit into every rank's live model
and optimizer (rank 0 broadcasting blocks while it reads), a damaged newest commit is
passed over on every rank, and restore() and sync() give every rank rank 0's state.

The reference is rank 0's state itself, which every rank rebuilds from its seed (CPU
training is deterministic); every rank starts from weights of its own.
"""

import os

import pytest
import torch

import flock.torch as bf
from flock.errors import FlockElasticError

BIG = 4_500_000  # float32 in one buffer: 18 MB, more than one broadcast batch (16 MB)


def trained(seed):
    """A model (linear, batch norm, a large buffer) and SGD with momentum, two steps
    in; the same on every rank for one seed."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.BatchNorm1d(7),
                                torch.nn.Linear(7, 3))
    model.register_buffer("table", torch.randn(BIG))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(6, 5)
    for _ in range(2):
        optimizer.zero_grad()
        model(x).pow(2).sum().backward()
        optimizer.step()
    return model, optimizer


def tensors(model, optimizer):
    found = [t.clone() for t in model.state_dict().values()]
    return found + [t.clone() for entry in optimizer.state_dict()["state"].values()
                    for t in entry.values() if isinstance(t, torch.Tensor)]


def assert_same(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.fixture
def elastic_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOCK_ELASTIC_DIR", str(tmp_path))  # rank 0's alone is used
    monkeypatch.setenv("FLOCK_ELASTIC_LAUNCH", "1")
    return tmp_path


def test_resume_reads_rank0s_commit_into_every_ranks_model(elastic_dir, rank):
    model, optimizer = trained(100 + rank)
    bf.elastic.TorchState(model, optimizer, step=10 + rank).commit()
    expected = tensors(*trained(100))

    fresh, fresh_optimizer = trained(200 + rank)
    addresses = [t.data_ptr() for t in fresh.state_dict().values()]
    state = bf.elastic.TorchState(fresh, fresh_optimizer, step=-1)
    assert state._resume() is True
    assert state.step == 10 and state.resumed_from["world_size"] == bf.size()
    assert_same(tensors(fresh, fresh_optimizer), expected)
    assert [t.data_ptr() for t in fresh.state_dict().values()] == addresses


def test_damaged_newest_commit_is_passed_over_on_every_rank(elastic_dir, rank):
    model, optimizer = trained(100 + rank)
    state = bf.elastic.TorchState(model, optimizer, step=1)
    state.commit()
    with torch.no_grad():
        model[0].weight.add_(1.0)
    state.step = 2
    state.commit()
    if rank == 0:
        newest = os.path.join(elastic_dir, sorted(os.listdir(elastic_dir))[-1])
        with open(newest, "r+b") as handle:  # the last byte of the data
            handle.seek(-1, os.SEEK_END)
            last = handle.read(1)
            handle.seek(-1, os.SEEK_END)
            handle.write(bytes([last[0] ^ 0x10]))
    fresh, fresh_optimizer = trained(200 + rank)
    resumed = bf.elastic.TorchState(fresh, fresh_optimizer, step=0)
    assert resumed._resume() and resumed.step == 1
    assert_same(tensors(fresh, fresh_optimizer), tensors(*trained(100)))
    if rank == 0:
        assert os.path.exists(newest + ".corrupt")


def test_restore_and_sync_give_every_rank_rank0s_state(monkeypatch, rank):
    monkeypatch.delenv("FLOCK_ELASTIC_DIR", raising=False)
    model, optimizer = trained(100 + rank)
    state = bf.elastic.TorchState(model, optimizer, epoch=rank)
    state.commit()
    with torch.no_grad():
        model[2].bias.add_(rank + 1.0)
    state.epoch = 99
    state.restore()
    assert state.epoch == 0
    assert_same(tensors(model, optimizer), tensors(*trained(100)))

    with torch.no_grad():
        model[0].bias.fill_(float(rank))
    state.epoch = rank + 5
    state.sync()
    assert state.epoch == 5 and torch.equal(model[0].bias, torch.zeros(7))


def test_a_commit_that_does_not_fit_is_an_error_on_every_rank(elastic_dir):
    bf.elastic.TorchState(torch.nn.Linear(3, 4)).commit()
    with pytest.raises(FlockElasticError, match="(?s)does not fit.*size mismatch for weight"):
        bf.elastic.TorchState(torch.nn.Linear(3, 5))._resume()
    bf.barrier()  # every rank raised; none is left in a collective
