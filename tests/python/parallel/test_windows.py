"""Window ops (win_put, win_accumulate, win_get, win_update, versions, mutexes, push-sum)
against numpy references built from every rank's value, with explicit barriers between a
write and the read that must see it. Runs at any world size; the topology is the default
exponential graph unless a test sets another.
"""

import threading
import time
import warnings

import numpy as np
import pytest
import torch

import flock.torch as bf
from conftest import needs_ranks
from flock import topology_util as tu
from flock.errors import FlockError, FlockInvalidArgumentError, FlockMismatchError


def value_of(r, shape=(3, 2), dtype=torch.float64):
    """Rank r's tensor in these tests: distinct per rank and per element."""
    return (torch.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) + 10.0 * r + 1.0)


@pytest.fixture
def window(rank):
    """A float64 window 'w' on this rank's value; freed afterwards (collective)."""
    made = []

    def make(name="w", zero_init=False, shape=(3, 2), dtype=torch.float64):
        tensor = value_of(rank, shape, dtype)
        assert bf.win_create(tensor, name, zero_init=zero_init)
        made.append(name)
        return tensor

    yield make
    for name in made:
        if name in bf.get_current_created_window_names():
            bf.win_free(name)


def ins():
    return bf.in_neighbor_ranks()


def outs():
    return bf.out_neighbor_ranks()


def assert_close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=1e-12,
                               atol=1e-12)


def test_put_then_default_update_averages_in_neighbours(rank, window):
    x = window()
    bf.win_put(x, "w")
    bf.barrier()
    out = bf.win_update("w")
    assert out is x  # in place, on the window's tensor
    expected = (value_of(rank).numpy() + sum(value_of(j).numpy() for j in ins())) / (len(ins()) + 1)
    assert_close(x, expected)


def test_put_to_some_destinations_with_a_weight(rank, size, window):
    x = window()
    dst = {outs()[0]: 1.5} if outs() else {}
    bf.win_put(x, "w", dst_weights=dst)
    bf.barrier()
    out = bf.win_update("w", self_weight=0.5, neighbor_weights={j: 0.25 for j in ins()})
    # Slot j holds 1.5·x_j if j put to this rank, else the initial copy of this rank's value.
    graph = bf.load_topology()
    senders = [j for j in range(size) if sorted(set(graph.successors(j)) - {j})[:1] == [rank]]
    slots = {j: (1.5 * value_of(j).numpy() if j in senders else value_of(rank).numpy())
             for j in ins()}
    assert_close(out, 0.5 * value_of(rank).numpy() + sum(0.25 * s for s in slots.values()))


def test_accumulate_adds_to_the_slots(rank, window):
    x = window()
    bf.win_accumulate(x, "w")
    bf.barrier()
    bf.win_update("w", self_weight=1.0, neighbor_weights={j: 1.0 for j in ins()})
    # Each slot started as a copy of this rank's value and got x_j added.
    expected = value_of(rank).numpy() + sum(value_of(rank).numpy() + value_of(j).numpy()
                                            for j in ins())
    assert_close(x, expected)


def test_get_then_clone_leaves_the_window_alone(rank, window):
    x = window()
    bf.barrier()
    bf.win_get("w", src_weights={j: 2.0 for j in ins()})  # the receiver scales
    out = bf.win_update("w", clone=True)
    expected = (value_of(rank).numpy() + sum(2.0 * value_of(j).numpy() for j in ins())) / \
        (len(ins()) + 1)
    assert_close(out, expected)
    assert_close(x, value_of(rank).numpy())
    bf.barrier()


def test_versions_count_puts_and_gets_until_an_update(rank, window):
    x = window()
    assert bf.get_win_version("w") == {j: 0 for j in ins()}
    bf.barrier()  # no rank puts before every rank has looked (a fast neighbour did)
    bf.win_put(x, "w")
    bf.barrier()
    assert bf.get_win_version("w") == {j: 1 for j in ins()}
    bf.win_update("w")
    assert bf.get_win_version("w") == {j: 0 for j in ins()}
    bf.barrier()
    bf.win_get("w")
    assert bf.get_win_version("w") == {j: 1 for j in ins()}
    bf.barrier()


def test_update_then_collect_resets_the_slots(rank, window):
    x = window()
    first = bf.win_update_then_collect("w").clone()
    second = bf.win_update_then_collect("w")
    expected = value_of(rank).numpy() * (len(ins()) + 1)
    assert_close(first, expected)
    assert_close(second, expected)  # the slots were zero the second time
    bf.barrier()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_other_floating_dtypes(rank, window, dtype):
    x = window(name="w." + str(dtype), dtype=dtype)
    bf.win_put(x, "w." + str(dtype), dst_weights={j: 0.5 for j in outs()})
    bf.barrier()
    out = bf.win_update("w." + str(dtype), self_weight=0.5,
                        neighbor_weights={j: 1.0 for j in ins()})
    own = value_of(rank, dtype=dtype).double().numpy()
    expected = 0.5 * own + sum(value_of(j, dtype=dtype).double().numpy() * 0.5 for j in ins())
    tolerance = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    np.testing.assert_allclose(out.double().numpy(), expected, rtol=tolerance)


def test_large_tensors_travel_in_lanes(rank, window):
    x = window(name="big", shape=(300, 100))  # 240 KB: above the inline limit
    bf.win_put(x, "big")
    bf.barrier()
    bf.win_update("big", self_weight=0.0, neighbor_weights={j: 1.0 for j in ins()})
    assert_close(x, sum(value_of(j, (300, 100)).numpy() for j in ins()) if ins()
                 else np.zeros((300, 100)))
    bf.barrier()
    bf.win_get("big")
    out = bf.win_update("big", self_weight=0.0, neighbor_weights={j: 1.0 for j in ins()},
                        clone=True)
    bf.barrier()
    assert out.shape == (300, 100)


def test_put_scales_the_tensor_by_self_weight_once_sent(rank, window):
    x = window()
    bf.win_put(x, "w", self_weight=0.25)
    assert_close(x, 0.25 * value_of(rank).numpy())
    bf.barrier()
    bf.win_update("w", self_weight=0.0, neighbor_weights={j: 1.0 for j in ins()})
    assert_close(x, sum(value_of(j).numpy() for j in ins()) if ins() else np.zeros((3, 2)))
    bf.barrier()


def test_names_in_creation_order(window):
    assert bf.get_current_created_window_names() == []
    window("1")
    window("2")
    assert bf.get_current_created_window_names() == ["1", "2"]
    bf.win_free("1")
    assert bf.get_current_created_window_names() == ["2"]
    bf.win_free()
    assert bf.get_current_created_window_names() == []


@needs_ranks(2)
def test_associated_p_follows_the_data_on_a_ring(rank, size, window):
    """Bluefog's push-sum check: rank 0 accumulates to both ring neighbours with self 0.5."""
    bf.set_topology(tu.RingGraph(size))
    try:
        x = window(zero_init=True)
        bf.turn_on_win_ops_with_associated_p()
        left, right = (rank - 1) % size, (rank + 1) % size
        if rank == 0:
            bf.win_accumulate(x, "w", self_weight=0.5,
                              dst_weights={left: 0.5, right: 0.5} if size > 2 else {right: 0.5})
        bf.barrier()
        bf.win_update_then_collect("w")
        p = bf.win_associated_p("w")
        neighbours = {1, size - 1} if size > 2 else {1}
        assert p == pytest.approx(0.5 if rank == 0 else 1.5 if rank in neighbours else 1.0)
    finally:
        bf.turn_off_win_ops_with_associated_p()
        bf.win_free()
        bf.set_topology(tu.ExponentialGraph(size))


def test_push_sum_reaches_the_exact_average(rank, size):
    """Push-sum on the (directed) exponential graph, made lock-step by barriers: x / p
    converges to the average of every rank's value, and the weights keep summing to size."""
    ext = torch.cat([value_of(rank, (5,)), torch.ones(1, dtype=torch.float64)])
    assert bf.win_create(ext, "ps", zero_init=True)
    try:
        share = 1.0 / (len(outs()) + 1)
        for _ in range(60):
            bf.win_accumulate(ext, "ps", self_weight=share,
                              dst_weights={j: share for j in outs()}, require_mutex=True)
            bf.barrier()
            bf.win_update_then_collect("ps")
            bf.barrier()
        average = np.mean([value_of(r, (5,)).numpy() for r in range(size)], axis=0)
        np.testing.assert_allclose((ext[:-1] / ext[-1]).numpy(), average, rtol=1e-9)
        total_p = bf.allreduce(ext[-1:].clone(), average=False).item()
        assert total_p == pytest.approx(size)
    finally:
        bf.win_free("ps")


def test_concurrent_accumulates_sum_exactly(rank, window):
    x = window(zero_init=True, shape=(64,))
    ones = torch.ones(64, dtype=torch.float64)
    handles = [bf.win_accumulate_nonblocking(ones, "w", require_mutex=True) for _ in range(20)]
    for h in handles:
        bf.win_wait(h)
    bf.barrier()
    bf.win_update("w", self_weight=0.0, neighbor_weights={j: 1.0 for j in ins()})
    assert_close(x, np.full(64, 20.0 * len(ins())))
    bf.barrier()


@needs_ranks(2)
def test_win_mutex_excludes_until_released(rank, window):
    """Rank 0 holds its slots for every other rank; their win_mutex on rank 0 waits."""
    window()
    others = [r for r in range(bf.size()) if r != 0]
    if rank == 0:
        with bf.win_mutex("w", for_self=True, ranks=others):
            bf.barrier()
            time.sleep(0.6)
        bf.barrier()
    else:
        bf.barrier()
        start = time.monotonic()
        with bf.win_mutex("w", ranks=[0]):
            waited = time.monotonic() - start
        assert waited > 0.4
        bf.barrier()


@needs_ranks(2)
def test_a_busy_rank_still_serves_puts_and_gets(rank, window):
    """Rank 0 computes for 1.5 s without calling flock; the others' gets from it complete
    long before it is back, and their puts are applied meanwhile (its engine thread)."""
    x = window()
    bf.barrier()
    if rank == 0:
        time.sleep(1.5)
        senders = [j for j in ins() if 0 in bf.load_topology().successors(j)]
        assert bf.get_win_version("w") == {j: (1 if j in senders else 0) for j in ins()}
    else:
        start = time.monotonic()
        if 0 in outs():
            bf.win_put(x, "w", dst_weights={0: 1.0})
        if 0 in ins():
            bf.win_get("w", src_weights={0: 1.0})
        assert time.monotonic() - start < 0.7
    bf.barrier()


def test_set_topology_is_refused_while_a_window_exists(size, window):
    window()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert bf.set_topology(tu.ExponentialGraph(size)) is True  # the one in force
        if size >= 2:
            assert bf.set_topology(np.eye(size)) is False
            assert any("windows 'w' exist" in str(w.message) for w in caught)
    bf.win_free("w")
    assert bf.set_topology(tu.ExponentialGraph(size))


def test_bad_input_fails_clearly_and_the_next_op_works(rank, size, window):
    x = window()
    with pytest.raises(FlockInvalidArgumentError, match="no window 'nope'"):
        bf.win_put(x, "nope")
    with pytest.raises(FlockInvalidArgumentError, match="no window 'nope'"):
        bf.win_update("nope")
    strangers = [r for r in range(size) if r != rank and r not in outs()]
    if strangers:
        with pytest.raises(FlockInvalidArgumentError, match="not an out-neighbour"):
            bf.win_put(x, "w", dst_weights={strangers[0]: 1.0})
    with pytest.raises(FlockInvalidArgumentError, match="does not match the window"):
        bf.win_put(torch.zeros(5, dtype=torch.float64), "w")
    with pytest.raises(FlockError, match="exists already"):
        bf.win_create(value_of(rank), "w")
    bf.win_put(x, "w")  # the window still works
    bf.barrier()


@needs_ranks(2)
def test_neighbours_with_different_shapes_fail_on_every_rank(rank):
    shape = (4,) if rank == 0 else (3,)
    with pytest.raises(FlockMismatchError, match="in-neighbour"):
        bf.win_create(torch.zeros(shape, dtype=torch.float64), "odd")
    assert bf.get_current_created_window_names() == []


def test_free_with_ops_in_flight_neither_hangs_nor_corrupts(rank, window):
    x = window(shape=(200, 100))
    handles = [bf.win_put_nonblocking(x, "w") for _ in range(3)]
    bf.win_free("w")
    for h in handles:
        try:
            bf.win_wait(h)
        except FlockError as error:
            assert "window" in str(error)
    bf.barrier()


def test_a_thread_can_update_while_the_engine_applies(rank, window):
    """win_update on one thread while puts keep arriving: every result is a mix of whole
    tensors (a slot is replaced at once, never half written)."""
    x = window(shape=(1000,))
    allowed = [value_of(j, (1000,)).numpy() for j in ins()]
    initial = value_of(rank, (1000,)).numpy()
    # Each slot is either its initial copy or the neighbour's whole tensor.
    sums = [sum(allowed[i] if (mask >> i) & 1 else initial for i in range(len(allowed)))
            for mask in range(2 ** len(allowed))] if allowed else [np.zeros(1000)]
    bf.barrier()
    errors = []

    def update():
        for _ in range(20):
            out = bf.win_update("w", self_weight=0.0,
                                neighbor_weights={j: 1.0 for j in ins()}, clone=True).numpy()
            if not any(np.array_equal(out, s) for s in sums):
                errors.append("a slot was read half written")

    reader = threading.Thread(target=update)
    reader.start()
    for _ in range(10):
        bf.win_put(value_of(rank, (1000,)), "w")
    reader.join()
    bf.barrier()
    out = bf.win_update("w", self_weight=0.0, neighbor_weights={j: 1.0 for j in ins()})
    assert_close(out, sum(allowed) if ins() else np.zeros(1000))
    assert not errors
    del x


def test_timeline_and_counters_show_window_ops(rank, size, window):
    import json
    import os
    x = window()
    before = bf.engine_counters()
    bf.barrier()  # no neighbour's put or get reaches this rank before `before` is read
    path = "/tmp/flock-test-window-timeline-np{}.json".format(size)
    bf.timeline_start(path)
    bf.win_put(x, "w")
    bf.win_get("w")
    bf.barrier()
    bf.timeline_stop()
    after = bf.engine_counters()
    assert after["window_ops"] - before["window_ops"] == 2
    # Sent: the put to each out-neighbour, and the reply to each out-neighbour's get.
    assert after["window_bytes"] - before["window_bytes"] == 2 * x.numel() * 8 * len(outs())
    assert after["window_served"] - before["window_served"] == len(ins()) + len(outs())
    rank_path = path.replace(".json", ".rank{}.json".format(rank))
    with open(rank_path) as f:
        events = json.load(f)
    os.remove(rank_path)
    rows = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert any(r.startswith("win_put.w.") for r in rows), rows
    assert any(r.startswith("win_get.w.") for r in rows), rows
    phases = {e["name"] for e in events if e["ph"] == "B"}
    assert {"win_put", "win_get", "QUEUED", "COMMUNICATE"} <= phases, phases


def test_associated_p_travels_with_puts(rank, window):
    """A put with p on replaces the destination's slot p by p_self * weight and scales this
    rank's p by self_weight once sent; win_update combines p like the data."""
    x = window()
    bf.turn_on_win_ops_with_associated_p()
    try:
        bf.win_put(x, "w", self_weight=0.5, dst_weights={j: 0.5 for j in outs()})
        assert bf.win_associated_p("w") == pytest.approx(0.5)
        bf.barrier()
        bf.win_update("w", self_weight=1.0, neighbor_weights={j: 1.0 for j in ins()})
        assert bf.win_associated_p("w") == pytest.approx(0.5 + 0.5 * len(ins()))
    finally:
        bf.turn_off_win_ops_with_associated_p()
        bf.barrier()


@needs_ranks(2)
def test_set_machine_topology_is_refused_while_a_window_exists(size, window):
    window()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = bf.set_machine_topology(tu.ExponentialGraph(bf.machine_size()))
    # Refused with a warning, unless it is the machine topology already in force.
    assert kept is False or not caught
    if kept is False:
        assert any("windows 'w' exist" in str(w.message) for w in caught)
