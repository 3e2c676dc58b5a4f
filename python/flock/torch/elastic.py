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
as the sampler or a scheduler, through it), serialized with ``torch.save``.
"""

import io

import torch

from flock import basics
from flock.elastic import HostsUpdatedInterrupt, ObjectState, State, run
from flock.elastic._view_reader import ViewReader
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

    def _apply(self, snapshot) -> None:
        if self.model is not None and "model" in snapshot:
            self.model.load_state_dict(snapshot["model"])
        if self.optimizer is not None and "optimizer" in snapshot:
            self.optimizer.load_state_dict(snapshot["optimizer"])
        super()._apply(snapshot["values"])

    def _serialize(self, obj):
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        return buffer.getbuffer()  # the bytes in place: a writable view, no copy

    def _deserialize(self, data):
        reader = ViewReader(data)  # torch.load straight from the received buffer
        try:  # this job's own bytes: full unpickling is wanted
            return torch.load(reader, map_location="cpu", weights_only=False)
        except TypeError:  # a torch without weights_only
            reader.seek(0)
            return torch.load(reader, map_location="cpu")


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
