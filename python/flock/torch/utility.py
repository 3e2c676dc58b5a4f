"""Keeping the ranks' models and optimizers in step (Bluefog's names).

broadcast_parameters and allreduce_parameters work in place on the tensors
you pass (a module's state_dict(), named_parameters() or a list of tensors);
each tensor travels under a name of its own, all at once (nonblocking), then
they are waited for together. broadcast_optimizer_state sends the root's whole
optimizer state (any optimizer, any state: momentum buffers, Adam moments,
step counts) and loads it everywhere; broadcast_object does the same for any
picklable object (a scheduler's state_dict()).
"""

import io

import torch
from flock._public import publish

from flock.torch import ops


def _named_tensors(params, what):
    if isinstance(params, dict):
        items = list(params.items())
    else:
        items = list(params)
        if items and not isinstance(items[0], tuple):
            items = [(str(i), t) for i, t in enumerate(items)]
    for name, t in items:
        if not isinstance(t, torch.Tensor):
            raise TypeError("{}: {!r} is not a tensor but {}".format(what, name, type(t).__name__))
    return items


def broadcast_parameters(params, root_rank=0):
    """Overwrites every tensor with root_rank's (in place; storage unchanged)."""
    items = _named_tensors(params, "broadcast_parameters")
    handles = [ops.broadcast_nonblocking_(t.data, root_rank, name="broadcast_parameters." + name)
               for name, t in items]
    for h in handles:
        ops.synchronize(h)


def allreduce_parameters(params):
    """Averages every floating tensor over the ranks, in place; integer tensors (such
    as BatchNorm's num_batches_tracked) take their maximum."""
    items = _named_tensors(params, "allreduce_parameters")
    handles = []
    for name, t in items:
        op = "average" if (t.is_floating_point() or t.is_complex()) else "max"
        handles.append(ops.allreduce_nonblocking_(t.data, op=op,
                                                  name="allreduce_parameters." + name))
    for h in handles:
        ops.synchronize(h)


def broadcast_object(obj, root_rank=0, name=None):
    """Returns root_rank's ``obj`` on every rank (Horovod's name): any object torch.save
    pickles, e.g. a learning-rate scheduler's ``state_dict()``. The root gets ``obj``
    itself, the others a copy."""
    return _broadcast_pickled(obj, root_rank, "broadcast_object." + (name or "object"))


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Makes every rank's optimizer state (and hyperparameters) root_rank's.

    The root's state_dict() travels serialized: every entry keeps its type (tensors,
    0-d step tensors, ints, floats, None, tuples such as Adam's betas), ranks need not
    have stepped yet (an empty state becomes the root's, the root's empty state empties
    the others), and every optimizer works, distributed or not. The parameters are
    matched by their order in param_groups, which must be the same on every rank.
    State tensors land on each parameter's own device and floating dtype
    (``load_state_dict``). The optimizer object stays the same, so learning-rate
    schedulers attached to it keep driving it; their own state (``last_epoch``,
    ``base_lrs``) is theirs: send it with ``broadcast_object(scheduler.state_dict())``.
    """
    from flock.basics import rank
    state = _broadcast_pickled(optimizer.state_dict() if rank() == root_rank else None,
                               root_rank, "broadcast_optimizer_state", map_location="cpu")
    if rank() != root_rank:
        optimizer.load_state_dict(state)


def _broadcast_pickled(obj, root_rank, name, map_location=None):
    """root_rank's obj on every rank: its torch.save bytes, length first."""
    from flock.basics import rank
    if rank() == root_rank:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        payload = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        payload, length = None, torch.zeros(1, dtype=torch.int64)
    ops.broadcast_(length, root_rank, name=name + ".length")
    if payload is None:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    ops.broadcast_(payload, root_rank, name=name + ".payload")
    if rank() == root_rank:
        return obj
    return _load(io.BytesIO(payload.numpy().tobytes()), map_location)


def _load(buffer, map_location):
    try:  # the bytes come from this job's root rank: full unpickling is wanted
        return torch.load(buffer, map_location=map_location, weights_only=False)
    except TypeError:  # a torch without weights_only
        buffer.seek(0)
        return torch.load(buffer, map_location=map_location)


publish(globals(), ["broadcast_parameters", "allreduce_parameters", "broadcast_object",
                    "broadcast_optimizer_state"])
