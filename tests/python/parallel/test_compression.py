"""compression=flock.Compression.fp16 / .bf16 on every op and the optimizers.

The reference is the float64 result of the uncompressed op, computed in numpy from every
rank's input. A compressed result must
- come back in the input's dtype (written into it by the in-place forms),
- be exactly representable in the wire dtype: it came back through it (an uncompressed
  op's float32 result practically never is),
- lie within the rounding bound: u per rounding of each magnitude involved (u = 2^-11
  for fp16, 2^-8 for bf16) — the inputs, every partial sum that crossed the wire (at most
  one per rank for allreduce), and the result; sums themselves are computed in float32.
Tensors that are not floating point, or 16 bits wide already, travel unchanged.
"""

import numpy as np
import pytest
import torch

import flock.numpy as fnp
import flock.torch as bf
from flock import topology as tu
import neighbor_reference as nr
from reference import rank_input, to_torch

UNIT = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
WIRE = {"fp16": torch.float16, "bf16": torch.bfloat16}
SHAPE = (257, 3)


def _inputs(seed, dtype):
    return [rank_input(seed, r, dtype, SHAPE) for r in range(bf.size())]


def _check(got, dtype, compression, expected, magnitude, roundings, what):
    assert got.dtype == getattr(torch, dtype), what
    wire = WIRE[compression]
    assert torch.equal(got.to(wire).to(got.dtype), got), "{}: not through {}".format(what, wire)
    allowed = roundings * UNIT[compression] * magnitude + 1e-6
    error = np.abs(got.double().numpy() - expected)
    assert (error <= allowed).all(), "{}: error {} > allowed {}".format(
        what, error.max(), allowed.reshape(-1)[int(np.argmax(error - allowed))])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("compression", ["fp16", "bf16"])
@pytest.mark.parametrize("average", [False, True])
def test_allreduce(compression, dtype, average):
    n, rank = bf.size(), bf.rank()
    inputs = _inputs(1, dtype)
    scale = 1.0 / n if average else 1.0
    expected = scale * np.sum(inputs, axis=0)
    magnitude = scale * np.sum(np.abs(inputs), axis=0)
    tensor = to_torch(inputs[rank], dtype)
    got = bf.allreduce(tensor, average=average, name="cmp.allreduce",
                       compression=getattr(bf.Compression, compression))
    _check(got, dtype, compression, expected, magnitude, n + 2, "allreduce")
    # in place, nonblocking: the result lands in the caller's tensor, in its dtype
    handle = bf.allreduce_nonblocking_(tensor, average=average, name="cmp.allreduce_",
                                       compression=compression)
    assert bf.synchronize(handle) is tensor
    _check(tensor, dtype, compression, expected, magnitude, n + 2, "allreduce_nonblocking_")


@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_neighbor_allreduce_static_and_in_place(compression):
    n, rank = bf.size(), bf.rank()
    topology = tu.ExponentialGraph(n)
    bf.set_topology(topology)
    w = nr.static_mixing(topology, weighted=False)
    inputs = _inputs(2, "float32")
    tensor = to_torch(inputs[rank], "float32")
    got = bf.neighbor_allreduce(tensor, name="cmp.nar", compression=compression)
    expected, magnitude = nr.mixed(w, inputs, rank), nr.mixed_bound(w, inputs, rank)
    _check(got, "float32", compression, expected, magnitude, 3, "neighbor_allreduce")
    bf.neighbor_allreduce_(tensor, name="cmp.nar_", compression=compression)
    _check(tensor, "float32", compression, expected, magnitude, 3, "neighbor_allreduce_")


def test_hierarchical_neighbor_allreduce():
    n, rank = bf.size(), bf.rank()
    local = bf.local_size()
    if n % local:
        pytest.skip("machines of unequal size")
    bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    w = nr.static_mixing(tu.ExponentialGraph(bf.machine_size()), weighted=False)
    inputs = _inputs(3, "float64")
    got = bf.hierarchical_neighbor_allreduce(to_torch(inputs[rank], "float64"), name="cmp.hier",
                                             compression=bf.Compression.fp16)
    expected = nr.hierarchical(inputs, local, w)[rank]
    magnitude = nr.hierarchical_bound(inputs, local, w)[rank]
    _check(got, "float64", "fp16", expected, magnitude, local + 4, "hierarchical")


def test_gathers_broadcast_and_pair_gossip_send_the_rounded_values():
    n, rank = bf.size(), bf.rank()
    inputs = _inputs(4, "float32")
    rounded = [to_torch(x, "float32").half().float() for x in inputs]
    got = bf.allgather(to_torch(inputs[rank], "float32"), name="cmp.ag", compression="fp16")
    assert got.dtype == torch.float32 and torch.equal(got, torch.cat(rounded))
    got = bf.broadcast(to_torch(inputs[rank], "float32"), 0, name="cmp.bc", compression="fp16")
    assert torch.equal(got, rounded[0])  # the root too: every rank ends the same
    bf.set_topology(tu.ExponentialGraph(n))
    got = bf.neighbor_allgather(to_torch(inputs[rank], "float32"), name="cmp.nag",
                                compression="fp16")
    sources = bf.in_neighbor_ranks()
    if sources:
        assert torch.equal(got, torch.cat([rounded[r] for r in sources]))
    peer = rank ^ 1  # pairs (0, 1), (2, 3), ...; the last rank of an odd size sits out
    if peer < n:
        got = bf.pair_gossip(to_torch(inputs[rank], "float32"), peer, name="cmp.pg",
                             compression="fp16")
        expected = 0.5 * (inputs[rank] + inputs[peer])
        magnitude = 0.5 * (np.abs(inputs[rank]) + np.abs(inputs[peer]))
        _check(got, "float32", "fp16", expected, magnitude, 3, "pair_gossip")


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.bfloat16])
def test_tensors_that_would_not_shrink_travel_unchanged(dtype):
    tensor = torch.arange(12, dtype=torch.float32).to(dtype) * (bf.rank() + 1)
    plain = bf.allreduce(tensor, op=bf.Sum, name="cmp.plain")
    squeezed = bf.allreduce(tensor, op=bf.Sum, name="cmp.squeezed", compression="fp16")
    assert squeezed.dtype == dtype and torch.equal(plain, squeezed)


def test_numpy_ops_take_fp16_and_refuse_bf16():
    values = np.linspace(-3, 3, 50) * (bf.rank() + 1)
    got = fnp.allreduce(values, op=fnp.Sum, name="cmp.np", compression=fnp.Compression.fp16)
    expected = np.linspace(-3, 3, 50) * bf.size() * (bf.size() + 1) / 2
    assert got.dtype == np.float64
    assert np.all(np.abs(got - expected) <= (bf.size() + 2) * UNIT["fp16"] * np.abs(expected)
                  + 1e-6)
    with pytest.raises(TypeError, match="bfloat16"):
        fnp.allreduce(values, compression="bf16")


def test_an_unknown_compression_is_refused_before_anything_is_sent():
    with pytest.raises(TypeError, match="Compression.none, .fp16 or .bf16"):
        bf.allreduce(torch.ones(3), compression="int8")


@pytest.mark.skipif(bf.size() < 2, reason="needs a peer that compresses differently")
def test_ranks_that_disagree_on_compression_fail_on_every_rank():
    compression = "fp16" if bf.rank() == 0 else None
    with pytest.raises(bf.FlockMismatchError, match="float16"):
        bf.allreduce(torch.ones(8), name="cmp.disagree", compression=compression)
    # the next call of the name works
    assert torch.equal(bf.allreduce(torch.ones(8), name="cmp.disagree"), torch.ones(8))


@pytest.mark.parametrize("kind", ["gradient_allreduce", "atc", "awc"])
def test_optimizers_send_half_the_bytes_and_still_fit(kind):
    torch.manual_seed(5)
    model = torch.nn.Linear(40, 1, bias=False)
    g = torch.Generator().manual_seed(bf.rank())
    x = torch.randn(200, 40, generator=g)
    y = x @ torch.linspace(-1, 1, 40).unsqueeze(1)
    sgd = torch.optim.SGD(model.parameters(), lr=0.05)
    bf.set_topology(tu.ExponentialGraph(bf.size()))
    if kind == "gradient_allreduce":
        optimizer = bf.DistributedGradientAllreduceOptimizer(sgd, model, compression="fp16")
    elif kind == "atc":
        optimizer = bf.DistributedAdaptThenCombineOptimizer(sgd, model, compression="fp16")
    else:
        optimizer = bf.DistributedAdaptWithCombineOptimizer(sgd, model, compression="fp16")
    counters = ("bytes", "neighbor_bytes")
    before = {c: bf.engine_counters()[c] for c in counters}
    for step in range(150):
        batch = slice(step % 10 * 20, step % 10 * 20 + 20)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x[batch]), y[batch]).backward()
        optimizer.step()
    if kind == "atc":
        optimizer.synchronize()  # what the last step left in flight
    sent = sum(bf.engine_counters()[c] - before[c] for c in counters)
    # 40 parameters (or gradients) a step, 2 bytes each: once for the allreduce, once
    # per out-neighbour for the neighbor ops
    copies = 1 if kind == "gradient_allreduce" else len(bf.out_neighbor_ranks())
    assert sent == 150 * 40 * 2 * copies, sent
    loss = torch.nn.functional.mse_loss(model(x), y).item()
    assert loss < 1e-3, loss
