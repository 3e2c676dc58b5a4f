"""hierarchical_neighbor_allreduce against the numpy reference: the mean of each
machine, mixed by the machine-level W, the same on every rank of a machine.

Machines are faked with FLOCK_LOCAL_SIZE or Bluefog's BLUEFOG_NODES_PER_MACHINE
(set in os.environ, then flock re-initialized): 2 ranks per machine at 4 and 6
ranks (2x2, 3x2), 3 per machine at 6 ranks (2x3); other sizes skip. Covered
there: the static machine topology (set_machine_topology, uniform and
weighted), no machine topology set (an error), the nonblocking form, dynamic
machine weights from GetExp2DynamicSendRecvMachineRanks over several steps,
and dst machine weights that scale. Then flock is re-initialized as it was.
Without faking, all ranks share this host's memory: one machine,
whose result is its mean times the self weight.
"""

import os
import zlib

import numpy as np
import pytest
import torch

import flock.torch as bf
import neighbor_reference as nr
from flock import topology as tu
from emulated_machines import EMULATION_VARIABLES, fake_machines
from reference import rank_input, to_torch


def _fake_local_sizes(size):
    # Homogeneous machines, at least 2 of them.
    return [local for local in (2, 3) if size % local == 0 and size // local >= 2]


needs_machines = pytest.mark.skipif(not _fake_local_sizes(bf.size()),
                                    reason="no local size makes >= 2 equal machines")


def _seed(*key):
    return zlib.crc32(repr(key).encode())


def _tensor(values, dtype):
    # A copy: to_torch may share memory with the float64 reference inputs, which an
    # in-place op would then overwrite.
    return to_torch(values, dtype).clone()


def _run(inputs, rank, dtype, machine_w, local, name, nonblocking=False, **weights):
    """One hierarchical_neighbor_allreduce; checks it against the reference and returns it."""
    tensor = _tensor(inputs[rank], dtype)
    before = tensor.clone()
    if nonblocking:
        got = bf.synchronize(bf.hierarchical_neighbor_allreduce_nonblocking(tensor, name=name,
                                                                            **weights))
    else:
        got = bf.hierarchical_neighbor_allreduce(tensor, name=name, **weights)
    assert torch.equal(tensor, before), "{}: the input must not be modified".format(name)
    assert got.dtype == tensor.dtype and got.shape == tensor.shape
    nr.assert_weighted_close(got.to(torch.float64).numpy(),
                             nr.hierarchical(inputs, local, machine_w)[rank],
                             nr.hierarchical_bound(inputs, local, machine_w)[rank], dtype, name)
    return got


def _same_on_every_rank_of_a_machine(got, local, size):
    # The machine's result is broadcast inside it: bit-identical on its ranks.
    rows = bf.allgather(got.reshape(1, -1), name="hier.same").numpy()
    for r in range(size):
        np.testing.assert_array_equal(rows[r], rows[(r // local) * local])


@needs_machines
@pytest.mark.parametrize("variable", EMULATION_VARIABLES)
@pytest.mark.parametrize("local", [2, 3])
def test_static_machine_topology(local, variable, rank, size):
    if local not in _fake_local_sizes(size):
        pytest.skip("{} ranks do not make >= 2 machines of {}".format(size, local))
    with fake_machines(local, variable):
        machines = bf.machine_size()
        x = _tensor(rank_input(1, rank, "float32", (3,)), "float32")
        # No machine topology yet (a fresh init): an error on every rank, no hang.
        with pytest.raises(bf.FlockError):
            bf.hierarchical_neighbor_allreduce(x, name="hier.unset")

        ring = tu.RingGraph(machines)
        assert bf.set_machine_topology(ring)
        w = nr.static_mixing(ring, weighted=False)
        for dtype in ["float32", "float64"]:
            seed = _seed("ring", local, dtype)
            inputs = [rank_input(seed, r, dtype, (2, 5)) for r in range(size)]
            got = _run(inputs, rank, dtype, w, local, "hier.ring.{}".format(dtype))
            _same_on_every_rank_of_a_machine(got, local, size)

        # Weighted: the star's unequal weights (machine 0 is the centre).
        star = tu.StarGraph(machines)
        assert bf.set_machine_topology(star, is_weighted=True)
        inputs = [rank_input(_seed("star", local), r, "float64", (7,)) for r in range(size)]
        _run(inputs, rank, "float64", star.to_numpy(), local, "hier.star")

        # Unweighted exponential graph, nonblocking.
        expo = tu.ExponentialGraph(machines)
        assert bf.set_machine_topology(expo)
        inputs = [rank_input(_seed("expo", local), r, "float32", (4,)) for r in range(size)]
        _run(inputs, rank, "float32", nr.static_mixing(expo, weighted=False), local, "hier.expo",
             nonblocking=True)


@needs_machines
@pytest.mark.parametrize("variable", EMULATION_VARIABLES)
@pytest.mark.parametrize("local", [2, 3])
def test_dynamic_machine_weights(local, variable, rank, size):
    if local not in _fake_local_sizes(size):
        pytest.skip("{} ranks do not make >= 2 machines of {}".format(size, local))
    with fake_machines(local, variable):
        machines = bf.machine_size()
        # One generator per machine (every rank of a machine passes the same weights).
        generators = [tu.GetExp2DynamicSendRecvMachineRanks(size, local, m * local, 0)
                      for m in range(machines)]
        me = bf.machine_rank()
        for k in range(3):
            args = [nr.uniform_args(send, recv) for send, recv in (next(g) for g in generators)]
            if k == 2:  # dst weights as a dict that scales the sent mean
                args = [(sw, {j: 0.5 for j in src}, {d: 2.0 * (m + 1) for d in dst})
                        for m, (sw, src, dst) in enumerate(args)]
            w = nr.dynamic_mixing(args)
            inputs = [rank_input(_seed("dyn", local, k), r, "float64", (6,)) for r in range(size)]
            sw, src, dst = args[me]
            got = _run(inputs, rank, "float64", w, local, "hier.dyn.{}".format(k),
                       self_weight=sw, src_machine_weights=src, dst_machine_weights=dst,
                       enable_topo_check=(k == 1))
            _same_on_every_rank_of_a_machine(got, local, size)


@pytest.mark.skipif(any(os.environ.get(v, "0") not in ("", "0") for v in EMULATION_VARIABLES),
                    reason="machines are faked for the whole job")
def test_one_real_machine_gives_the_mean(rank, size):
    # Every rank of the job runs on this host: one shared-memory group, one machine.
    assert bf.machine_size() == 1 and bf.local_size() == size
    inputs = [rank_input(_seed("one.machine"), r, "float64", (5,)) for r in range(size)]
    assert bf.set_machine_topology(tu.RingGraph(1))  # [[1.0]]: no machine neighbours
    _run(inputs, rank, "float64", np.array([[1.0]]), size, "hier.one.static")
    _run(inputs, rank, "float64", np.array([[0.5]]), size, "hier.one.dynamic",
         self_weight=0.5, src_machine_weights={}, dst_machine_weights=[])
