"""What the training examples share: Bluefog's --dist-optimizer names and the dynamic
topology knobs set before each step (optional_extras.py has tqdm and matplotlib).
"""

import sys

import flock.torch as bf
from flock import topology as tu

# Bluefog's --dist-optimizer values, plus flock's "empty" (no communication). "win_put"
# builds DistributedWinPutOptimizer (asynchronous: window ops, docs/windows.md).
DIST_OPTIMIZERS = ["neighbor_allreduce", "hierarchical_neighbor_allreduce", "allreduce",
                   "gradient_allreduce", "empty", "win_put"]


def make_dist_optimizer(name, optimizer, model, atc_style=False, num_steps_per_communication=1,
                        compression=None):
    """Wraps `optimizer` as Bluefog's examples do for --dist-optimizer / --atc-style
    (compression: flock's, "fp16" or "bf16"; not for win_put)."""
    steps = num_steps_per_communication
    if name == "gradient_allreduce":
        return bf.DistributedGradientAllreduceOptimizer(
            optimizer, model=model, num_steps_per_communication=steps, compression=compression)
    if name == "win_put":
        if compression not in (None, "none"):
            raise SystemExit("--compression does not apply to win_put (window ops send as is)")
        return bf.DistributedWinPutOptimizer(optimizer, model=model,
                                             num_steps_per_communication=steps)
    wrap = (bf.DistributedAdaptThenCombineOptimizer if atc_style
            else bf.DistributedAdaptWithCombineOptimizer)
    return wrap(optimizer, model=model, communication_type=bf.CommunicationType[name],
                num_steps_per_communication=steps, compression=compression)


class DynamicTopology:
    """Per step, the optimizer's knobs for a dynamic topology (one peer at a time).

    neighbor_allreduce: inner/outer exponential-two hops on several machines of more
    than two ranks each, else one out-neighbour of the static topology per step;
    hierarchical_neighbor_allreduce: one machine per step (exponential-two hops).
    Other optimizers have no dynamic form: describe() says so and apply() does nothing.
    """

    def __init__(self, dist_optimizer):
        self.kind, self.schedule = dist_optimizer, None
        if dist_optimizer == "neighbor_allreduce":
            if bf.is_homogeneous() and bf.machine_size() > 1 and bf.local_size() > 2:
                self.schedule = tu.GetInnerOuterExpo2DynamicSendRecvRanks(
                    bf.size(), bf.local_size(), bf.rank())
            else:
                self.schedule = tu.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())
        elif dist_optimizer == "hierarchical_neighbor_allreduce" and bf.machine_size() > 1:
            self.schedule = tu.GetExp2DynamicSendRecvMachineRanks(
                bf.size(), bf.local_size(), bf.rank(), bf.local_rank())

    def describe(self):
        return "static topology" if self.schedule is None else "dynamic one-peer topology"

    def apply(self, optimizer):
        if self.schedule is None:
            return
        send, recv = next(self.schedule)
        set_one_peer_weights(optimizer, send, recv, machines=self.kind != "neighbor_allreduce")


def set_one_peer_weights(optimizer, send, recv, machines):
    """A combine optimizer's knobs for one step of a one-peer schedule: this rank (or its
    machine, with machines=True) averaged uniformly with what it receives."""
    weight = 1.0 / (len(recv) + 1)
    optimizer.self_weight = weight
    optimizer.enable_topo_check = False  # the schedule agrees by construction
    if machines:
        optimizer.src_machine_weights = {m: weight for m in recv}
        optimizer.dst_machine_weights = list(send)
    else:
        optimizer.src_weights = {r: weight for r in recv}
        optimizer.dst_weights = list(send)


def print_line(line):
    """Writes one whole line in a single write, so that lines printed by several ranks at
    once reach the terminal whole rather than interleaved (print() writes the text and
    the newline separately)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
