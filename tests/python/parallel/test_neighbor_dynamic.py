"""Dynamic neighbor ops: the call's own sends and receives instead of the static topology.

Covered, against the dense numpy reference (neighbor_reference.py), every rank
recomputing every rank's arguments: 4 steps of each dynamic schedule of
flock.topology (one peer over ExponentialGraph and RingGraph, the inner/outer
schedules and the machine exp-2 schedule where their preconditions hold, seen
at rank level); ranks outside the static graph, dst weights that scale the
value; empty send lists, empty receive lists, ranks with no source at all
(self_weight * x, input untouched); pair_gossip over alternating pairings
(an unpaired rank sits the step out); neighbor_allgather static (order of
in_neighbor_ranks()) and dynamic (order of src_ranks), rows differing per rank,
0-d tensors, integer and bool dtypes, numpy arrays; 50 names submitted
nonblocking in a different order on every rank.

All calls are named: a rank that sits out a call (pair_gossip) must not shift
the unnamed-op counters.
"""

import random
import zlib

import numpy as np
import pytest
import torch

import flock.numpy as fnp
import flock.torch as bf
import neighbor_reference as nr
from conftest import needs_ranks
from flock import topology as tu
from reference import ALL_DTYPES, rank_input, to_torch

STEPS = 4


@pytest.fixture(autouse=True)
def default_topology_afterwards():
    yield
    bf.set_topology(tu.ExponentialGraph(bf.size()))


def _seed(*key):
    return zlib.crc32(repr(key).encode())


def _tensor(values, dtype):
    # A copy: to_torch may share memory with the float64 reference inputs, which an
    # in-place op would then overwrite.
    return to_torch(values, dtype).clone()


def _inputs(seed, dtype, shape, size):
    return [rank_input(seed, r, dtype, shape) for r in range(size)]


def _run_dynamic(args, rank, size, name, dtype="float32", shape=(5,), in_place=False,
                 nonblocking=False):
    """One dynamic neighbor_allreduce with every rank's args[r]; checks the result
    against the reference and that the input is untouched (not in place)."""
    inputs = _inputs(_seed(name, dtype, shape), dtype, shape, size)
    tensor = _tensor(inputs[rank], dtype)
    before = tensor.clone()
    self_weight, src_weights, dst_weights = args[rank]
    kwargs = dict(self_weight=self_weight, src_weights=src_weights, dst_weights=dst_weights,
                  name=name)
    if in_place and nonblocking:
        result = bf.synchronize(bf.neighbor_allreduce_nonblocking_(tensor, **kwargs))
    elif in_place:
        result = bf.neighbor_allreduce_(tensor, **kwargs)
    elif nonblocking:
        result = bf.synchronize(bf.neighbor_allreduce_nonblocking(tensor, **kwargs))
    else:
        result = bf.neighbor_allreduce(tensor, **kwargs)
    if in_place:
        assert result is tensor
    else:
        assert torch.equal(tensor, before), "{}: the input must not be modified".format(name)
    w = nr.dynamic_mixing(args)
    assert result.dtype == tensor.dtype and result.shape == tensor.shape
    nr.assert_weighted_close(result.to(torch.float64).numpy(), nr.mixed(w, inputs, rank),
                             nr.mixed_bound(w, inputs, rank), dtype, name)
    return result


def _steps_of(generators):
    """The next (send_ranks, recv_ranks) of every rank's schedule generator."""
    return [next(g) for g in generators]


# ---- dynamic schedules

@pytest.mark.parametrize("base", ["ExponentialGraph", "RingGraph"])
def test_one_peer_schedule(base, rank, size):
    topo = getattr(tu, base)(size)
    generators = [tu.GetDynamicOnePeerSendRecvRanks(topo, r) for r in range(size)]
    for k in range(STEPS):
        steps = _steps_of(generators)
        args = [nr.uniform_args(send, recv) for send, recv in steps]
        if k % 2 == 1:  # dst_weights as {rank: 1.0} instead of a list
            args = [(sw, src, {d: 1.0 for d in dst}) for sw, src, dst in args]
        _run_dynamic(args, rank, size, "onepeer.{}.{}".format(base, k),
                     nonblocking=(k == 2), in_place=(k == 3))


def _inner_outer_local_sizes(size):
    # Their precondition: more than 2 ranks per machine, machines of equal size.
    return [local for local in sorted({3, size}) if local > 2 and size % local == 0]


@pytest.mark.skipif(not _inner_outer_local_sizes(bf.size()),
                    reason="needs a local size > 2 dividing size()")
@pytest.mark.parametrize("schedule", ["GetInnerOuterRingDynamicSendRecvRanks",
                                      "GetInnerOuterExpo2DynamicSendRecvRanks"])
def test_inner_outer_schedules(schedule, rank, size):
    for local in _inner_outer_local_sizes(size):
        generators = [getattr(tu, schedule)(size, local, r) for r in range(size)]
        for k in range(STEPS):
            args = [nr.uniform_args(send, recv) for send, recv in _steps_of(generators)]
            _run_dynamic(args, rank, size, "io.{}.{}.{}".format(schedule, local, k),
                         dtype="float64")


@pytest.mark.skipif(bf.size() < 2, reason="needs 2 machines")
def test_exp2_machine_schedule_at_rank_level(rank, size):
    # Each rank talks to the same local rank on the schedule's machines.
    for local in [d for d in range(1, size // 2 + 1) if size % d == 0]:
        generators = [tu.GetExp2DynamicSendRecvMachineRanks(size, local, r, r % local)
                      for r in range(size)]
        for k in range(STEPS):
            steps = _steps_of(generators)
            args = [nr.uniform_args([m * local + r % local for m in send],
                                    [m * local + r % local for m in recv])
                    for r, (send, recv) in enumerate(steps)]
            _run_dynamic(args, rank, size, "exp2m.{}.{}".format(local, k))


# ---- patterns

def test_ranks_outside_the_static_graph_and_scaled_sends(rank, size):
    bf.set_topology(tu.RingGraph(size))
    # Rank r sends to r + 2, which is not a ring neighbour from 5 ranks on; the
    # sender scales its value by 0.5 (dst weight), the receiver by its src weight.
    dsts = [{(r + 2) % size: 0.5} if (r + 2) % size != r else {} for r in range(size)]
    if size >= 5:
        assert not set(dsts[rank]) & set(bf.out_neighbor_ranks())
    args = [(0.75, {j: 0.5 for j in range(size) if r in dsts[j]}, dsts[r]) for r in range(size)]
    _run_dynamic(args, rank, size, "outside", dtype="float64")


def test_empty_send_and_receive_lists(rank, size):
    # Even ranks send to nobody; odd ranks send to both ring neighbours, so odd
    # ranks receive nothing and even ranks receive from 0, 1 or 2 ranks.
    dsts = [[] if r % 2 == 0 else sorted({(r + 1) % size, (r - 1) % size} - {r})
            for r in range(size)]
    args = nr.args_from_destinations(dsts)
    _run_dynamic(args, rank, size, "empty.lists")
    _run_dynamic(args, rank, size, "empty.lists.inplace", in_place=True)


def test_a_rank_with_no_sources(rank, size):
    # Everybody sends to rank 0 only: ranks 1.. have no source and get self_weight * x,
    # with the input untouched (Bluefog modified it in this case).
    dsts = [[0] if r != 0 else [] for r in range(size)]
    args = nr.args_from_destinations(dsts, self_weight=0.3)
    args[0] = (0.5, {j: 0.5 / max(size - 1, 1) for j in range(1, size)}, [])
    result = _run_dynamic(args, rank, size, "nosrc", dtype="float64")
    if rank != 0:
        x = rank_input(_seed("nosrc", "float64", (5,)), rank, "float64", (5,))
        np.testing.assert_allclose(result.numpy(), 0.3 * x, rtol=1e-15, atol=0)


def test_nobody_talks_to_anybody(rank, size):
    args = [(0.3, {}, []) for _ in range(size)]
    _run_dynamic(args, rank, size, "alone", dtype="float64")
    _run_dynamic(args, rank, size, "alone.nb", dtype="float64", nonblocking=True)
    _run_dynamic(args, rank, size, "alone.inplace", dtype="float64", in_place=True,
                 nonblocking=True)


# ---- pair_gossip

def _partner(rank, size, step):
    """Pairs (0,1)(2,3)... on even steps, (1,2)(3,4)...(n-1,0) on odd ones; None if unpaired."""
    shift = step % 2
    position = (rank - shift) % size
    other = position ^ 1
    if other >= size:
        return None  # odd size: one rank per step has no partner
    return (other + shift) % size


def test_partner_schedule_is_symmetric(size):
    for step in range(2):
        for r in range(size):
            p = _partner(r, size, step)
            assert p is None or (p != r and _partner(p, size, step) == r)
        assert sum(_partner(r, size, step) is None for r in range(size)) == size % 2


def test_pair_gossip(rank, size):
    for step in range(STEPS):
        name = "gossip.{}".format(step)
        inputs = _inputs(_seed(name), "float64", (4,), size)
        partner = _partner(rank, size, step)
        if partner is None:
            continue  # nothing to do: pair_gossip only talks to the partner
        x = _tensor(inputs[rank], "float64")
        before = x.clone()
        if step == 0:  # the defaults: 0.5 / 0.5
            a, b = 0.5, 0.5
            got = bf.pair_gossip(x, partner, name=name)
        else:  # each side applies its own weights
            a, b = 0.5 + 0.125 * (rank % 2), 0.25 + 0.25 * (rank % 3)
            if step == 3:
                got = bf.synchronize(bf.pair_gossip_nonblocking(x, partner, self_weight=a,
                                                                pair_weight=b, name=name))
            else:
                got = bf.pair_gossip(x, partner, self_weight=a, pair_weight=b, name=name)
        assert torch.equal(x, before)
        expected = a * inputs[rank] + b * inputs[partner]
        nr.assert_weighted_close(got.numpy(), expected,
                                 a * np.abs(inputs[rank]) + b * np.abs(inputs[partner]),
                                 "float64", name)


@needs_ranks(2)
def test_pair_gossip_float32_with_every_pair_at_once(rank, size):
    # The same as neighbor_allreduce(t, a, {r: b}, [r]).
    partner = _partner(rank, size, 0)
    inputs = _inputs(_seed("gossip32"), "float32", (3, 3), size)
    if partner is not None:
        got = bf.pair_gossip(_tensor(inputs[rank], "float32"), partner, self_weight=0.25,
                             pair_weight=0.75, name="gossip32")
        assert got.dtype == torch.float32
        nr.assert_weighted_close(got.to(torch.float64).numpy(),
                                 0.25 * inputs[rank] + 0.75 * inputs[partner],
                                 0.25 * np.abs(inputs[rank]) + 0.75 * np.abs(inputs[partner]),
                                 "float32", "gossip32")


# ---- neighbor_allgather

def _rows(rank):
    return rank % 3  # 0, 1 or 2 rows: dim 0 differs between ranks, including empty


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_neighbor_allgather_static_every_dtype(dtype, rank, size):
    seed = _seed("gather", dtype)
    inputs = [rank_input(seed, r, dtype, (_rows(r), 2)) for r in range(size)]
    tensor = _tensor(inputs[rank], dtype)
    before = tensor.clone()
    got = bf.neighbor_allgather(tensor, name="gather.{}".format(dtype))
    assert torch.equal(tensor, before)
    order = nr.in_neighbors(tu.ExponentialGraph(size), rank)
    assert order == bf.in_neighbor_ranks()
    assert got.dtype == tensor.dtype
    expected = nr.gather(inputs, order, (2,))
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.to(torch.float64).numpy(), expected)


@pytest.mark.parametrize("graph", ["RingGraph2", "StarGraph", "FullyConnectedGraph"])
def test_neighbor_allgather_static_other_topologies(graph, rank, size):
    topo = {"RingGraph2": lambda n: tu.RingGraph(n, connect_style=2),
            "StarGraph": tu.StarGraph, "FullyConnectedGraph": tu.FullyConnectedGraph}[graph](size)
    bf.set_topology(topo)
    inputs = [np.full((_rows(r) + 1, 3, 2), float(r)) for r in range(size)]
    handle = bf.neighbor_allgather_nonblocking(torch.from_numpy(inputs[rank]).float(),
                                               name="gather.{}".format(graph))
    got = bf.synchronize(handle)
    expected = nr.gather(inputs, nr.in_neighbors(topo, rank), (3, 2))
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_neighbor_allgather_dynamic_keeps_the_src_order(dtype, rank, size):
    dsts = [sorted({(r + 1) % size, (r + 3) % size} - {r}) for r in range(size)]
    srcs = [[j for j in range(size) if r in dsts[j]] for r in range(size)]
    random.Random(500 + rank).shuffle(srcs[rank])  # not sorted: the result follows this order
    seed = _seed("dgather", dtype)
    inputs = [rank_input(seed, r, dtype, (_rows(r) + 1, 4)) for r in range(size)]
    tensor = _tensor(inputs[rank], dtype)
    got = bf.neighbor_allgather(tensor, src_ranks=srcs[rank], dst_ranks=dsts[rank],
                                name="dgather.{}".format(dtype))
    expected = nr.gather(inputs, srcs[rank], (4,))
    assert got.dtype == tensor.dtype and tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.to(torch.float64).numpy(), expected)


def test_neighbor_allgather_zero_dim_tensors(rank, size):
    values = [float(10 * r + 1) for r in range(size)]
    x = torch.tensor(values[rank], dtype=torch.float64)
    assert x.dim() == 0
    got = bf.neighbor_allgather(x, name="gather.0d")  # a 0-d tensor counts as one row
    order = nr.in_neighbors(tu.ExponentialGraph(size), rank)
    assert got.shape == (len(order),) and got.tolist() == [values[j] for j in order]
    # Dynamic: everybody sends to rank 0 (rank 0 to rank 1), sources in descending order.
    dsts = [[0] if r != 0 else ([1] if size > 1 else []) for r in range(size)]
    srcs = [sorted((j for j in range(size) if r in dsts[j]), reverse=True) for r in range(size)]
    got = bf.neighbor_allgather(x, src_ranks=srcs[rank], dst_ranks=dsts[rank], name="dgather.0d")
    assert got.shape == (len(srcs[rank]),) and got.tolist() == [values[j] for j in srcs[rank]]


def test_neighbor_allgather_numpy(rank, size):
    mine = np.full((_rows(rank), 2), rank, dtype=np.int32)
    got = fnp.neighbor_allgather(mine, name="np.gather")
    order = nr.in_neighbors(tu.ExponentialGraph(size), rank)
    expected = nr.gather([np.full((_rows(r), 2), r, dtype=np.int32) for r in range(size)],
                         order, (2,))
    assert isinstance(got, np.ndarray) and got.dtype == np.int32
    assert np.array_equal(got, expected) and got.shape == expected.shape


# ---- any order

def test_fifty_names_in_any_order(rank, size):
    # Even names use the static topology, odd ones a dynamic ring (send to r+1).
    static_w = nr.static_mixing(tu.ExponentialGraph(size), weighted=False)
    ring = [sorted({(r + 1) % size} - {r}) for r in range(size)]
    ring_args = nr.args_from_destinations(ring)
    dynamic_w = nr.dynamic_mixing(ring_args)
    order = list(range(50))
    random.Random(1000 + rank).shuffle(order)  # a different order on every rank
    inputs = {i: _inputs(_seed("any", i), "float64", (i % 5 + 1,), size) for i in range(50)}
    handles = {}
    for i in order:
        x = _tensor(inputs[i][rank], "float64")
        name = "any.{}".format(i)
        if i % 2 == 0:
            handles[i] = bf.neighbor_allreduce_nonblocking(x, name=name)
        else:
            sw, src, dst = ring_args[rank]
            handles[i] = bf.neighbor_allreduce_nonblocking(x, self_weight=sw, src_weights=src,
                                                           dst_weights=dst, name=name)
    for i in range(50):
        got = bf.synchronize(handles[i])
        w = static_w if i % 2 == 0 else dynamic_w
        nr.assert_weighted_close(got.numpy(), nr.mixed(w, inputs[i], rank),
                                 nr.mixed_bound(w, inputs[i], rank), "float64", "any.{}".format(i))
