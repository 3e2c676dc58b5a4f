"""Elastic training for PyTorch: ``bf.elastic`` reads as Horovod's ``hvd.elastic``.

::

    state = bf.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, step=0)
    state.register_reset_callbacks([bf.elastic.scale_learning_rate(optimizer, base_lr)])

    @bf.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for batch in loader:            # DataLoader(dataset, batch_sampler=sampler)
                ...; optimizer.step(); sampler.record_batch(); state.step += 1
                if state.step % 10 == 0:
                    state.commit()
            sampler.set_epoch(state.epoch + 1)

    train(state)

Run it with ``flockrun --elastic`` (docs/elastic.md). TorchState saves the model's
and optimizer's ``state_dict()`` and every value (a value with ``state_dict``, such
as the sampler or a scheduler, through it). Tensors are kept out of the pickle as
raw blocks (flock/elastic/_packing.py): a commit is written straight from them, and
a restore reads the file, and receives rank 0's broadcast, straight into the live
model's parameters and the optimizer's state, allocating nothing for them.
"""

import itertools

import numpy as np
import torch

from flock import basics
from flock.elastic import HostsUpdatedInterrupt, ObjectState, State, run
from flock.torch._elastic_sampler import ElasticSampler

__all__ = ["TorchState", "ObjectState", "State", "HostsUpdatedInterrupt", "run",
           "ElasticSampler", "scale_learning_rate", "rebuild_topology"]


class TorchState(State):
    """A model, an optimizer and values, committed and restored together."""

    def __init__(self, model=None, optimizer=None, **values) -> None:
        self.model, self.optimizer = model, optimizer
        super().__init__(**values)

    def _snapshot(self):
        snapshot = {"values": super()._snapshot()}
        if self.model is not None:
            snapshot["model"] = self.model.state_dict()
        if self.optimizer is not None:
            snapshot["optimizer"] = self.optimizer.state_dict()
        return snapshot

    def _apply(self, snapshot, in_place=()) -> None:
        """Load what was not restored in place already, then the values."""
        if self.model is not None and "model" in snapshot and "model" not in in_place:
            self.model.load_state_dict(snapshot["model"])
        if self.optimizer is not None and "optimizer" in snapshot and \
                "optimizer" not in in_place:
            self.optimizer.load_state_dict(snapshot["optimizer"])
        super()._apply(snapshot["values"])

    def _block_of(self, obj):
        if not isinstance(obj, torch.Tensor):
            return None
        tensor = obj.detach()
        tensor = (tensor if tensor.device.type == "cpu" else tensor.cpu()).contiguous()
        return (str(tensor.dtype).replace("torch.", ""), tuple(tensor.shape)), _bytes_of(tensor)

    def _new_block(self, meta):
        name, shape = meta
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"a commit holds a tensor of unknown dtype {name!r}")
        tensor = _cpu_empty(shape, dtype)
        return tensor, _bytes_of(tensor)

    def _bind(self, state, placed, buffers):
        index = {id(tensor): i for i, tensor in enumerate(placed)}
        in_place = set()
        if self.model is not None and "model" in state and \
                _bind_model(self.model, state["model"], index, buffers):
            in_place.add("model")
        if self.optimizer is not None and "optimizer" in state and \
                _bind_optimizer(self.optimizer, state["optimizer"], index, buffers):
            in_place.add("optimizer")
        return lambda: self._apply(state, in_place)


def _bytes_of(tensor) -> "numpy.ndarray":
    """A contiguous CPU tensor's memory as a flat uint8 array (no copy)."""
    return tensor.detach().reshape(-1).view(torch.uint8).numpy()


def _cpu_empty(shape, dtype):
    """An unfilled CPU tensor in memory from numpy, which asks the kernel for huge
    pages for large arrays: the restore's first writes into fresh memory then take
    about two thirds of the time they take in torch.empty's 4 KB pages."""
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * torch.empty((), dtype=dtype).element_size(), dtype=np.uint8)
    return torch.from_numpy(raw).view(dtype).reshape(shape)


def _fits(live, placed) -> bool:
    """Whether a block of placed's shape can be read straight into live."""
    return isinstance(live, torch.Tensor) and live.device.type == "cpu" and \
        live.dtype == placed.dtype and live.shape == placed.shape and live.is_contiguous()


def _bind_model(model, saved, index, buffers) -> bool:
    """Point the blocks of the model's tensors at its parameters and buffers; True
    when every entry is restored in place (else load_state_dict does the rest, and
    names what does not match)."""
    live = model.state_dict()  # detached views of the parameters: writing them is loading
    every = set(live) == set(saved)
    for key, value in saved.items():
        i = index.get(id(value))
        if i is not None and _fits(live.get(key), value):
            buffers[i] = _bytes_of(live[key])
            saved[key] = live[key]
        else:
            every = False
    return every


def _bind_optimizer(optimizer, saved, index, buffers) -> bool:
    """Load the optimizer's state with empty stand-ins for its tensors (it checks the
    groups and casts them as it always does, and copies nothing large), give each
    entry an unfilled tensor of the saved shape and of the dtype and device it was
    cast to, and point the blocks at those. All or none: when one cannot be read
    into in place, load_state_dict loads the filled blocks afterwards."""
    light = {pid: {key: value.new_empty(0) if id(value) in index else value
                   for key, value in entries.items()}
             for pid, entries in saved["state"].items()}
    optimizer.load_state_dict(dict(saved, state=light))
    params = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved["param_groups"]),
                      itertools.chain.from_iterable(g["params"] for g in optimizer.param_groups)))
    targets = []
    for param_id, entries in saved["state"].items():
        for key, value in entries.items():
            i = index.get(id(value))
            if i is None:
                continue
            if param_id not in params:
                return False
            cast = optimizer.state[params[param_id]][key]
            target = _cpu_empty(value.shape, cast.dtype) if cast.device.type == "cpu" else cast
            if not _fits(target, value):
                return False
            targets.append((params[param_id], key, i, target))
    for param, key, i, target in targets:
        optimizer.state[param][key] = target
        buffers[i] = _bytes_of(target)
    return True


def scale_learning_rate(optimizer, base_lr: float):
    """A reset callback setting every parameter group's lr to ``base_lr * size()``.

    A restored optimizer carries the learning rate of the world that committed it;
    this puts the one for the new world back (lr = base_lr × workers)."""

    def callback() -> None:
        for group in optimizer.param_groups:
            group["lr"] = base_lr * basics.size()

    return callback


def rebuild_topology(kind: str = "exponential"):
    """A reset callback setting the topology for the new world.

    ``"exponential"``: ExponentialGraph(size()) between ranks (flock's default);
    ``"machine"``: also ExponentialGraph(machine_size()) between machines, for the
    hierarchical optimizers, built from the new host set."""
    if kind not in ("exponential", "machine"):
        raise ValueError(f"rebuild_topology: kind must be 'exponential' or 'machine', "
                         f"got {kind!r}")

    def callback() -> None:
        from flock import _topology_runtime as runtime
        from flock.topology import ExponentialGraph
        runtime.set_topology(ExponentialGraph(basics.size()))
        if kind == "machine":
            runtime.set_machine_topology(ExponentialGraph(basics.machine_size()))

    return callback
