"""The soak's op kinds: each draws one call (dtype, size, weights, peers) from the shared
generator and returns a Call that knows this rank's part and its reference.

Every draw happens on every rank in the same order, whatever the rank, so the ranks
stay in step; only making the rank's own tensor depends on the rank. The static rank
and machine topologies are the Job's (soak.py changes them now and then).

    allreduce.<op>                  op sum, average, min, max or product; any dtype
                                    (average: floating); a quarter in place
    broadcast                       random root; any dtype; a quarter in place
    allgather                       dim 0 differs between ranks (0 rows included)
    neighbor_allreduce.static       the Job's topology, uniform or weighted; in place too
    neighbor_allreduce.dynamic      every rank sends to 0-3 random ranks, scaled or not,
                                    with random self and source weights
    neighbor_allgather.static/.dynamic  any dtype; dynamic: sources in a random order
    hierarchical.static/.dynamic    machine means mixed by the machine topology, or by
                                    random machine weights the same on a machine's ranks
    pair_gossip                     a random pairing; the odd rank out sits this one out
    reducescatter.<op>              op sum, average, min, max or product; any dtype
                                    (average: floating); one shape on every rank, 0 to 2
                                    dims after dim 0, at times fewer rows than ranks
    alltoall                        any dtype; dim 0 differs between ranks; 3 in 4: random
                                    splits (zeros included, now and then a tensor), the
                                    result (tensor, received splits); else splits=None,
                                    dim 0 a multiple of the ranks, the result a tensor
"""

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

import flock.torch as bf
from soak_inputs import (ALL_DTYPES, FLOAT_DTYPES, ITEMSIZE, Concat, Inputs, Mix, MyRows,
                         Received, Reduce, draw_count, same_shape)


@dataclass
class Job:
    """What every rank knows of the job: sizes and the installed topologies' weights."""
    rank: int
    size: int
    local_size: int
    static_w: np.ndarray  # W[j][i]: the weight rank i gives rank j's value
    machine_w: np.ndarray  # the same over machines

    @property
    def machines(self):
        return self.size // self.local_size


@dataclass
class Call:
    kind: str
    inputs: Inputs
    reference: object  # Reduce, Concat, Mix, MyRows or Received for this rank
    start: Optional[Callable]  # start(nonblocking) -> handle or result; None: sits out
    nbytes: int  # this rank's input


@dataclass
class Draw:
    """What the soak fixes for a call: the generator, its name, the dtype and element
    count when forced (the warm-up's largest calls), the byte limit."""
    rng: np.random.Generator
    name: Optional[str]
    max_bytes: int
    dtype: Optional[str] = None
    count: Optional[int] = None

    def pick_dtype(self, choices):
        return self.dtype if self.dtype is not None else str(self.rng.choice(choices))

    def pick_count(self, dtype):
        if self.count is not None:
            return self.count
        return draw_count(self.rng, dtype, self.max_bytes)


def _call(kind, job, inputs, reference, start):
    nbytes = inputs.counts[job.rank] * ITEMSIZE[inputs.dtype]
    return Call(kind, inputs, reference, start, nbytes)


def _blocking_or_not(blocking, nonblocking, tensor, **kwargs):
    return lambda nb: (nonblocking if nb else blocking)(tensor, **kwargs)


def allreduce(op):
    def plan(job, d):
        dtype = d.pick_dtype(FLOAT_DTYPES if op == "average" else ALL_DTYPES)
        shape = same_shape(d.rng, d.pick_count(dtype))
        values = "product" if op == "product" else "signed"
        inputs = Inputs(d.rng, dtype, [shape] * job.size, values)
        in_place = d.rng.random() < 0.25
        reference = (Mix({r: 1.0 / job.size for r in range(job.size)}) if op == "average"
                     else Reduce(op))
        pair = ((bf.allreduce_, bf.allreduce_nonblocking_) if in_place
                else (bf.allreduce, bf.allreduce_nonblocking))
        start = _blocking_or_not(*pair, inputs.tensor(job.rank), op=op, name=d.name)
        return _call("allreduce." + op, job, inputs, reference, start)
    return plan


def broadcast(job, d):
    dtype = d.pick_dtype(ALL_DTYPES)
    inputs = Inputs(d.rng, dtype, [same_shape(d.rng, d.pick_count(dtype))] * job.size)
    root = int(d.rng.integers(job.size))
    pair = ((bf.broadcast_, bf.broadcast_nonblocking_) if d.rng.random() < 0.25
            else (bf.broadcast, bf.broadcast_nonblocking))
    start = _blocking_or_not(*pair, inputs.tensor(job.rank), root_rank=root, name=d.name)
    return _call("broadcast", job, inputs, Concat([root]), start)


def _row_inputs(job, d, dtype):
    """Inputs of (rows_r, width): the same width, rows differing by rank (0 included)."""
    width = int(d.rng.integers(1, 5))
    rows = [d.pick_count(dtype) // width for _ in range(job.size)]
    return Inputs(d.rng, dtype, [[n, width] for n in rows])


def allgather(job, d):
    inputs = _row_inputs(job, d, d.pick_dtype(ALL_DTYPES))
    start = _blocking_or_not(bf.allgather, bf.allgather_nonblocking, inputs.tensor(job.rank),
                             name=d.name)
    return _call("allgather", job, inputs, Concat(range(job.size)), start)


def _column(w, i):
    """{j: W[j][i]} over the nonzero weights of column i: what rank i combines."""
    return {j: float(w[j, i]) for j in range(len(w)) if w[j, i] != 0}


def neighbor_allreduce_static(job, d):
    dtype = d.pick_dtype(FLOAT_DTYPES)
    inputs = Inputs(d.rng, dtype, [same_shape(d.rng, d.pick_count(dtype))] * job.size)
    in_place = d.rng.random() < 0.25
    pair = ((bf.neighbor_allreduce_, bf.neighbor_allreduce_nonblocking_) if in_place
            else (bf.neighbor_allreduce, bf.neighbor_allreduce_nonblocking))
    start = _blocking_or_not(*pair, inputs.tensor(job.rank), name=d.name)
    return _call("neighbor_allreduce.static", job, inputs, Mix(_column(job.static_w, job.rank)),
                 start)


def draw_destinations(rng, size, most=3):
    """Every rank's destinations: 0 to `most` other ranks, drawn at random."""
    dsts = []
    for j in range(size):
        others = [r for r in range(size) if r != j]
        k = int(rng.integers(0, min(most, len(others)) + 1))
        dsts.append(sorted(int(r) for r in rng.choice(others, k, replace=False)) if k else [])
    return dsts


def draw_dynamic_weights(rng, size):
    """(self_weight, src_weights, dst_weights) of every rank and the W they make:
    W[i][i] = self_i, W[j][i] = src_i[j] · (rank j's scale for i; 1.0 in a list)."""
    dsts = draw_destinations(rng, size)
    scaled = [rng.random() < 0.5 for _ in range(size)]
    scales = [{i: float(rng.choice([0.5, 1.0, 2.0])) for i in dsts[j]} for j in range(size)]
    selfs = [float(rng.uniform(0.0, 1.0)) for _ in range(size)]
    srcs = [{j: float(rng.uniform(0.05, 1.0)) for j in range(size) if i in dsts[j]}
            for i in range(size)]
    w = np.zeros((size, size))
    for i in range(size):
        w[i, i] = selfs[i]
        for j, weight in srcs[i].items():
            w[j, i] = weight * (scales[j][i] if scaled[j] else 1.0)
    args = [(selfs[r], srcs[r], scales[r] if scaled[r] else dsts[r]) for r in range(size)]
    return args, w


def neighbor_allreduce_dynamic(job, d):
    dtype = d.pick_dtype(FLOAT_DTYPES)
    inputs = Inputs(d.rng, dtype, [same_shape(d.rng, d.pick_count(dtype))] * job.size)
    args, w = draw_dynamic_weights(d.rng, job.size)
    check = bool(d.rng.random() < 0.5)
    self_w, src, dst = args[job.rank]
    start = _blocking_or_not(bf.neighbor_allreduce, bf.neighbor_allreduce_nonblocking,
                             inputs.tensor(job.rank), self_weight=self_w, src_weights=src,
                             dst_weights=dst, enable_topo_check=check, name=d.name)
    return _call("neighbor_allreduce.dynamic", job, inputs, Mix(_column(w, job.rank)), start)


def neighbor_allgather_static(job, d):
    inputs = _row_inputs(job, d, d.pick_dtype(ALL_DTYPES))
    sources = sorted(j for j in _column(job.static_w, job.rank) if j != job.rank)
    start = _blocking_or_not(bf.neighbor_allgather, bf.neighbor_allgather_nonblocking,
                             inputs.tensor(job.rank), name=d.name)
    return _call("neighbor_allgather.static", job, inputs, Concat(sources), start)


def neighbor_allgather_dynamic(job, d):
    inputs = _row_inputs(job, d, d.pick_dtype(ALL_DTYPES))
    dsts = draw_destinations(d.rng, job.size)
    srcs = [[j for j in range(job.size) if i in dsts[j]] for i in range(job.size)]
    for order in srcs:
        d.rng.shuffle(order)  # the result follows the order of src_ranks
    check = bool(d.rng.random() < 0.5)
    start = _blocking_or_not(bf.neighbor_allgather, bf.neighbor_allgather_nonblocking,
                             inputs.tensor(job.rank), src_ranks=srcs[job.rank],
                             dst_ranks=dsts[job.rank], enable_topo_check=check, name=d.name)
    return _call("neighbor_allgather.dynamic", job, inputs, Concat(srcs[job.rank]), start)


def _hierarchical_mix(job, machine_w):
    """Rank weights of the machine means mixed by machine_w, for this rank's machine."""
    mine = job.rank // job.local_size
    return Mix({r: float(machine_w[r // job.local_size, mine]) / job.local_size
                for r in range(job.size) if machine_w[r // job.local_size, mine] != 0})


def hierarchical(dynamic):
    def plan(job, d):
        dtype = d.pick_dtype(FLOAT_DTYPES)
        inputs = Inputs(d.rng, dtype, [same_shape(d.rng, d.pick_count(dtype))] * job.size)
        kwargs, machine_w = {}, job.machine_w
        if dynamic:
            args, machine_w = draw_dynamic_weights(d.rng, job.machines)
            self_w, src, dst = args[job.rank // job.local_size]
            kwargs = dict(self_weight=self_w, src_machine_weights=src, dst_machine_weights=dst,
                          enable_topo_check=bool(d.rng.random() < 0.5))
        start = _blocking_or_not(bf.hierarchical_neighbor_allreduce,
                                 bf.hierarchical_neighbor_allreduce_nonblocking,
                                 inputs.tensor(job.rank), name=d.name, **kwargs)
        kind = "hierarchical.dynamic" if dynamic else "hierarchical.static"
        return _call(kind, job, inputs, _hierarchical_mix(job, machine_w), start)
    return plan


def pair_gossip(job, d):
    dtype = d.pick_dtype(FLOAT_DTYPES)
    inputs = Inputs(d.rng, dtype, [same_shape(d.rng, d.pick_count(dtype))] * job.size)
    order = [int(r) for r in d.rng.permutation(job.size)]
    partner = {}
    for a, b in zip(order[0::2], order[1::2]):
        partner[a], partner[b] = b, a
    weights = [(float(d.rng.uniform(0, 1)), float(d.rng.uniform(0, 1))) for _ in range(job.size)]
    other = partner.get(job.rank)
    if other is None:
        return _call("pair_gossip", job, inputs, None, None)
    self_w, pair_w = weights[job.rank]
    start = _blocking_or_not(bf.pair_gossip, bf.pair_gossip_nonblocking, inputs.tensor(job.rank),
                             target_rank=other, self_weight=self_w, pair_weight=pair_w,
                             name=d.name)
    return _call("pair_gossip", job, inputs, Mix({job.rank: self_w, other: pair_w}), start)


def _tail(rng):
    """The dims after dim 0, the same on every rank: none, or one or two small ones."""
    pick = rng.random()
    if pick < 0.4:
        return []
    if pick < 0.8:
        return [int(rng.integers(1, 5))]
    return [int(rng.integers(1, 5)), int(rng.integers(1, 4))]


def reducescatter(op):
    def plan(job, d):
        dtype = d.pick_dtype(FLOAT_DTYPES if op == "average" else ALL_DTYPES)
        tail = _tail(d.rng)
        rows = d.pick_count(dtype) // int(np.prod(tail, dtype=np.int64))
        values = "product" if op == "product" else "signed"
        inputs = Inputs(d.rng, dtype, [[rows] + tail] * job.size, values)
        whole = (Mix({r: 1.0 / job.size for r in range(job.size)}) if op == "average"
                 else Reduce(op))
        start = _blocking_or_not(bf.reducescatter, bf.reducescatter_nonblocking,
                                 inputs.tensor(job.rank), op=op, name=d.name)
        return _call("reducescatter." + op, job, inputs, MyRows(whole), start)
    return plan


def draw_splits(rng, rows, size):
    """The rows sent to each rank, adding up to rows: random shares, a few of them 0."""
    keep = rng.random(size) < 0.7
    if not keep.any():
        keep[int(rng.integers(size))] = True
    share = (rng.random(size) + 1e-3) * keep
    return [int(n) for n in rng.multinomial(rows, share / share.sum())]


def alltoall(job, d):
    dtype = d.pick_dtype(ALL_DTYPES)
    tail = _tail(d.rng)
    rows = [d.pick_count(dtype) // int(np.prod(tail, dtype=np.int64)) for _ in range(job.size)]
    even = bool(d.rng.random() < 0.25)
    if even:  # splits=None: dim 0 must divide by the ranks
        rows = [n - n % job.size for n in rows]
        splits = [[n // job.size] * job.size for n in rows]
    else:
        splits = [draw_splits(d.rng, n, job.size) for n in rows]
    as_tensor = bool(d.rng.random() < 0.25)
    inputs = Inputs(d.rng, dtype, [[n] + tail for n in rows])
    mine = None if even else splits[job.rank]
    if mine is not None and as_tensor:
        mine = torch.tensor(mine)
    start = _blocking_or_not(bf.alltoall, bf.alltoall_nonblocking, inputs.tensor(job.rank),
                             splits=mine, name=d.name)
    return _call("alltoall", job, inputs, Received(splits, not even), start)


# kind -> (planner, the dtypes it takes); soak.py draws kinds uniformly.
KINDS = {
    "allreduce.sum": (allreduce("sum"), ALL_DTYPES),
    "allreduce.average": (allreduce("average"), FLOAT_DTYPES),
    "allreduce.min": (allreduce("min"), ALL_DTYPES),
    "allreduce.max": (allreduce("max"), ALL_DTYPES),
    "allreduce.product": (allreduce("product"), ALL_DTYPES),
    "broadcast": (broadcast, ALL_DTYPES),
    "allgather": (allgather, ALL_DTYPES),
    "neighbor_allreduce.static": (neighbor_allreduce_static, FLOAT_DTYPES),
    "neighbor_allreduce.dynamic": (neighbor_allreduce_dynamic, FLOAT_DTYPES),
    "neighbor_allgather.static": (neighbor_allgather_static, ALL_DTYPES),
    "neighbor_allgather.dynamic": (neighbor_allgather_dynamic, ALL_DTYPES),
    "hierarchical.static": (hierarchical(False), FLOAT_DTYPES),
    "hierarchical.dynamic": (hierarchical(True), FLOAT_DTYPES),
    "pair_gossip": (pair_gossip, FLOAT_DTYPES),
    "reducescatter.sum": (reducescatter("sum"), ALL_DTYPES),
    "reducescatter.average": (reducescatter("average"), FLOAT_DTYPES),
    "reducescatter.min": (reducescatter("min"), ALL_DTYPES),
    "reducescatter.max": (reducescatter("max"), ALL_DTYPES),
    "reducescatter.product": (reducescatter("product"), ALL_DTYPES),
    "alltoall": (alltoall, ALL_DTYPES),
}
