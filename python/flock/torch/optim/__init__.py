"""Distributed optimizers: wrap any torch.optim.Optimizer (Bluefog's names).

    optimizer = bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(...), model)

The returned object is your optimizer (same class, state and hyperparameters)
that now also communicates; see docs/training.md for which to choose. The
gradient-allreduce and combine optimizers take ``compression=`` (flock.Compression.fp16
or .bf16: what they send travels in half precision, flock/compression.py).
"""

from flock.torch.optim._base import wrap
from flock.torch.optim._combine import (AdaptThenCombineMixin, AdaptWithCombineMixin,
                                        CommunicationType)
from flock.torch.optim._gradient_allreduce import GradientAllreduceMixin
from flock.torch.optim._windows import PullGetMixin, PushSumMixin, WinPutMixin


def DistributedGradientAllreduceOptimizer(optimizer, model=None, num_steps_per_communication=1,
                                          compression=None):
    """Every rank steps with the gradient averaged over all ranks (allreduce per parameter,
    launched from the backward pass). num_steps_per_communication = J: up to J backward
    passes accumulate before a step(); every step() averages (docs/training.md)."""
    return wrap(optimizer, GradientAllreduceMixin, model, num_steps_per_communication,
                compression)


def DistributedAdaptWithCombineOptimizer(optimizer, model=None,
                                         communication_type=CommunicationType.neighbor_allreduce,
                                         num_steps_per_communication=1, compression=None):
    """x ← combine(x) − lr·g(x): parameters are exchanged during the forward and backward
    pass; the J-th training forward pass (J = num_steps_per_communication) since the last
    exchange sends them, and the step() after it combines."""
    return wrap(optimizer, AdaptWithCombineMixin, model, communication_type,
                num_steps_per_communication, compression)


def DistributedAdaptThenCombineOptimizer(optimizer, model=None,
                                         communication_type=CommunicationType.neighbor_allreduce,
                                         num_steps_per_communication=1,
                                         overlap_next_forward=True, compression=None):
    """x ← combine(x − lr·g(x)) with the wrapped optimizer's own update rule, each parameter
    updated (with its accumulated p.grad) and sent as soon as its gradient of the J-th
    backward pass (J = num_steps_per_communication) is complete; the step() after it
    combines, earlier step() calls are local steps.

    overlap_next_forward (with a model): step() does not wait; each parameter gets its
    combination in the forward pre-hook of its module in the next pass (or at
    synchronize(), model.state_dict(), optimizer.state_dict()), so the exchange also
    overlaps the next forward pass. False: step() waits (docs/training.md)."""
    return wrap(optimizer, AdaptThenCombineMixin, model, communication_type,
                num_steps_per_communication, overlap_next_forward, compression)


def DistributedNeighborAllreduceOptimizer(optimizer, model=None, num_steps_per_communication=1,
                                          compression=None):
    """Bluefog's alias: adapt-with-combine over neighbor_allreduce."""
    return DistributedAdaptWithCombineOptimizer(
        optimizer, model, CommunicationType.neighbor_allreduce, num_steps_per_communication,
        compression)


def DistributedHierarchicalNeighborAllreduceOptimizer(optimizer, model=None,
                                                      num_steps_per_communication=1,
                                                      compression=None):
    """Bluefog's alias: adapt-with-combine over hierarchical_neighbor_allreduce."""
    return DistributedAdaptWithCombineOptimizer(
        optimizer, model, CommunicationType.hierarchical_neighbor_allreduce,
        num_steps_per_communication, compression)


def DistributedAllreduceOptimizer(optimizer, model=None, num_steps_per_communication=1,
                                  compression=None):
    """Bluefog's alias: adapt-with-combine over allreduce (parameters averaged globally)."""
    return DistributedAdaptWithCombineOptimizer(
        optimizer, model, CommunicationType.allreduce, num_steps_per_communication, compression)


def DistributedWinPutOptimizer(optimizer, model=None, num_steps_per_communication=1,
                               window_prefix=None):
    """Asynchronous: each step puts the parameters into the out-neighbours' windows and
    averages them with the latest values the in-neighbours put; no rank waits for
    another. ``optimizer.dst_weights`` may change every step (docs/windows.md)."""
    return wrap(optimizer, WinPutMixin, model, num_steps_per_communication, window_prefix)


def DistributedPullGetOptimizer(optimizer, model=None, num_steps_per_communication=1,
                                window_prefix=None):
    """Asynchronous: each step fetches the in-neighbours' current parameters
    (``optimizer.src_weights``) and averages with them."""
    return wrap(optimizer, PullGetMixin, model, num_steps_per_communication, window_prefix)


def DistributedPushSumOptimizer(optimizer, model=None, num_steps_per_communication=1,
                                window_prefix=None):
    """Push-sum: (parameter·weight, weight) shares accumulate into the out-neighbours'
    windows (``dst_weights``, ``self_weight``); works on directed graphs."""
    return wrap(optimizer, PushSumMixin, model, num_steps_per_communication, window_prefix)


__all__ = ["CommunicationType", "DistributedWinPutOptimizer", "DistributedPullGetOptimizer",
           "DistributedPushSumOptimizer", "DistributedGradientAllreduceOptimizer",
           "DistributedAdaptWithCombineOptimizer", "DistributedAdaptThenCombineOptimizer",
           "DistributedNeighborAllreduceOptimizer",
           "DistributedHierarchicalNeighborAllreduceOptimizer", "DistributedAllreduceOptimizer"]
