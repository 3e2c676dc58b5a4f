"""The scaling benchmark's training step with the real optimizer wrappers (--mode hooks).

A user's training loop on the synthetic model (scaling_model.py): zero_grad, forward,
backward, optimizer.step(). Communication is launched by what the user would use:

    allreduce           DistributedGradientAllreduceOptimizer(SGD): gradients averaged
    neighbor_static     DistributedAdaptThenCombineOptimizer(SGD, neighbor_allreduce) on
                        the static exponential-2 graph
    neighbor_one_peer   the same with the one-peer exponential schedule, set each step by
                        the optimizer's self_weight / src_weights / dst_weights
    hierarchical        ATC with hierarchical_neighbor_allreduce on the exponential-2
                        graph of machines
    hierarchical_one_peer
                        the same with the one-peer schedule of machines, set each step
                        by self_weight / src_machine_weights / dst_machine_weights
    ddp                 torch DistributedDataParallel over gloo, plain SGD

ATC gets overlap_next_forward (step() does not wait; each module's forward pre-hook in
the next pass waits for its parameters) unless --no-overlap. --compression fp16 gives
flock's optimizers compression=fp16 and DDP torch's fp16_compress_hook.

Each step k is timed on every rank: T = from its start to the next step's start (so a
wait in the next forward pass counts in the step whose exchange it waited for), the
compute the layers asked for (C, the sleeps), the time the wrapped SGD spent updating
(apply: in step() for allreduce and DDP, in the backward hooks for ATC), and

    wait = T - C - apply

what communication (and the CPU work around it) added to the step. The slowest rank's
row is kept for each step.
"""

import os
import sys
import time

import torch
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

import flock.torch as bf
from flock import topology as tu

import scaling_model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples", "python"))
import ddp_support  # noqa: E402  (examples/python: the same DDP set-up as the example)
import example_support  # noqa: E402  (the examples' one-peer knobs)

LR = 0.01
# Columns of a step's row: step time, forward+backward wall time (start to the end of
# loss.backward()), time in optimizer.step(), apply time, compute asked for.
COLUMNS = ("step", "fwd_bwd", "step_call", "apply", "compute")


class TimedSGD(torch.optim.SGD):
    """SGD that adds the time of its updates to apply_s, wherever the wrapper calls it."""

    apply_s = 0.0

    def step(self, closure=None):
        start = time.perf_counter()
        try:
            return super().step(closure)
        finally:
            self.apply_s += time.perf_counter() - start


class Knobs:
    """Sets the one-peer schedules' weights on the optimizer before each step."""

    def __init__(self, method):
        self.method, self.schedule = method, None
        if method == "neighbor_one_peer":
            self.schedule = tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())
        elif method == "hierarchical_one_peer":
            self.schedule = tu.GetExp2DynamicSendRecvMachineRanks(
                bf.size(), bf.local_size(), bf.rank(), bf.local_rank())

    def apply(self, optimizer):
        if self.schedule is None:
            return
        send, recv = next(self.schedule)
        example_support.set_one_peer_weights(optimizer, send, recv,
                                             machines=self.method != "neighbor_one_peer")


def set_topology(method):
    if method in ("neighbor_static", "neighbor_one_peer"):
        bf.set_topology(tu.ExponentialTwoGraph(bf.size()))
    elif method == "hierarchical":
        bf.set_machine_topology(tu.ExponentialTwoGraph(bf.machine_size()))


def make_training(method, model, overlap, compression="none"):
    """(model to call, optimizer, its TimedSGD) for `method` on the synthetic model.
    compression "fp16": flock's optimizers get compression=fp16, DDP torch's own
    fp16_compress_hook (gradients allreduced in float16), so the peer compresses too."""
    sgd = TimedSGD(model.parameters(), lr=LR)
    if method == "ddp":
        ddp_support.init_process_group()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        if compression == "fp16":
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return ddp, sgd, sgd
    if method == "allreduce":
        return model, bf.DistributedGradientAllreduceOptimizer(
            sgd, model=model, compression=compression), sgd
    set_topology(method)
    kind = (bf.CommunicationType.hierarchical_neighbor_allreduce
            if method.startswith("hierarchical") else bf.CommunicationType.neighbor_allreduce)
    optimizer = bf.DistributedAdaptThenCombineOptimizer(
        sgd, model=model, communication_type=kind, overlap_next_forward=overlap,
        compression=compression)
    return model, optimizer, sgd


def _train(net, optimizer, sgd, clock, knobs, x):
    """One step; returns (start, fwd_bwd, step_call, apply, compute) on this rank."""
    applied, asked = sgd.apply_s, clock.requested
    start = time.perf_counter()
    knobs.apply(optimizer)  # before the backward pass that launches the exchange
    optimizer.zero_grad(set_to_none=True)
    net(x).sum().backward()
    backward_end = time.perf_counter()
    optimizer.step()
    end = time.perf_counter()
    return (start, backward_end - start, end - backward_end, sgd.apply_s - applied,
            clock.requested - asked)


def run_case(model_name, method, compute_s, warmup, steps, overlap=True, compression="none"):
    """[(step, fwd_bwd, step_call, apply, compute, wait)] of the slowest rank per step."""
    model = scaling_model.build(model_name, compute_s)
    net, optimizer, sgd = make_training(method, model, overlap, compression)
    knobs, x = Knobs(method), torch.zeros(1)
    bf.barrier()  # the first step starts together; later ones as the exchanges let them
    # One step more than timed: a step's time ends where the next one starts.
    rows = [_train(net, optimizer, sgd, model.clock, knobs, x)
            for _ in range(warmup + steps + 1)]
    model.state_dict()  # waits for an exchange the last step left in flight (overlap)
    timed = [(rows[k + 1][0] - rows[k][0],) + rows[k][1:] for k in range(warmup, warmup + steps)]
    return slowest_rank(timed, "scaling.{}.{}".format(model_name, method))


def slowest_rank(timed, name):
    """Each step's row from the rank whose step took longest, with its wait added."""
    mine = torch.tensor(timed, dtype=torch.float64)
    every = bf.allgather(mine, name=name + ".rows").reshape(bf.size(), len(timed), -1)
    result = []
    for k in range(len(timed)):
        row = every[int(torch.argmax(every[:, k, 0])), k].tolist()
        step, _, _, apply, compute = row
        result.append(row + [step - compute - apply])
    return result
