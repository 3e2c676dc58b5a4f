"""Dynamic topologies without init(): Bluefog's Get*SendRecv*Ranks generators and the
schedule objects behind them, against the rules of SEMANTICS.md computed
independently in topology_reference.py, plus argument errors.
"""

import itertools

import networkx as nx
import pytest

import flock
import topology_reference as ref
from flock import topology as tu

STEPS = 9


def first_steps(generator, steps=STEPS):
    return list(itertools.islice(generator, steps))


@pytest.mark.parametrize("make", [lambda: ref.exponential(8), lambda: ref.exponential(12),
                                  lambda: ref.exponential(7, 3), lambda: ref.star(5),
                                  lambda: ref.ring(6), lambda: ref.mesh(6), lambda: ref.ring(1)])
def test_one_peer_matches_the_turn_rule(make):
    w = make()
    for rank in range(len(w)):
        expected = ref.one_peer_steps(w, rank, STEPS)
        assert first_steps(tu.GetDynamicOnePeerSendRecvRanks(w, rank)) == expected
        nx_graph = nx.from_numpy_array(w, create_using=nx.DiGraph)  # what Bluefog passes
        assert first_steps(tu.GetDynamicOnePeerSendRecvRanks(nx_graph, rank)) == expected


def test_one_peer_on_exponential_two_hops_by_powers_of_two():
    steps = first_steps(tu.GetDynamicOnePeerSendRecvRanks(tu.ExponentialTwoGraph(8), 0), 4)
    assert steps == [([1], [7]), ([2], [6]), ([4], [4]), ([1], [7])]


def test_star_center_receives_from_every_leaf_at_once():
    send, recv = next(tu.GetDynamicOnePeerSendRecvRanks(tu.StarGraph(5), 0))
    assert send == [1] and recv == [1, 2, 3, 4]


@pytest.mark.parametrize("world,local", [(12, 3), (8, 2), (10, 1), (6, 3)])
def test_exp2_machine_ranks(world, local):
    machines = world // local
    for rank in range(world):
        machine = rank // local
        expected = [([(machine + ref.exp2_hop(k, machines - 1)) % machines],
                     [(machine - ref.exp2_hop(k, machines - 1)) % machines]) for k in range(STEPS)]
        generator = tu.GetExp2DynamicSendRecvMachineRanks(world, local, rank, rank % local)
        assert first_steps(generator) == expected


@pytest.mark.parametrize("world,local", [(12, 4), (9, 3), (20, 5), (32, 8), (6, 3)])
@pytest.mark.parametrize("expo2", [False, True])
def test_inner_outer_ranks(world, local, expo2):
    make = (tu.GetInnerOuterExpo2DynamicSendRecvRanks if expo2
            else tu.GetInnerOuterRingDynamicSendRecvRanks)
    for rank in range(world):
        expected = [ref.inner_outer_step(k, world, local, rank, expo2) for k in range(STEPS)]
        assert first_steps(make(world, local, rank)) == expected


def test_inner_outer_ring_matches_the_documented_table():
    sends = [[next(itertools.islice(tu.GetInnerOuterRingDynamicSendRecvRanks(12, 4, r), k, None))[0]
              for r in range(12)] for k in range(3)]
    assert sends[0][:4] == [[4], [2], [3], [1]] and sends[0][8] == [0]
    assert sends[1][:4] == [[2], [5], [3], [0]]
    assert sends[2][4:8] == [[5], [7], [10], [4]]


def test_schedule_objects_give_lists_weights_and_mixing_graphs():
    schedule = tu.DynamicOnePeer(tu.ExponentialTwoGraph(8))
    assert schedule.size() == 8
    assert schedule.send_ranks(5, 3) == [7] and schedule.recv_ranks(5, 3) == [7]
    assert schedule.weights(0, 3) == (0.5, {2: 0.5}, {4: 1.0})
    mixing = schedule.mixing_graph(1)
    assert isinstance(mixing, tu.Graph) and tu.is_column_stochastic(mixing)
    assert schedule.turn_list(0) == [1, 2, 4]
    machine = tu.Exp2DynamicMachine(12, 3)
    assert machine.size() == 4 and machine.machine_of(7) == 2
    assert tu.InnerOuterExpo2Dynamic(32, 8).outgoing_local_rank(10) == 2


BAD_CALLS = [
    (lambda: tu.GetDynamicOnePeerSendRecvRanks(tu.RingGraph(4), 4),
     "self_rank = 4 is out of range"),
    (lambda: tu.GetDynamicOnePeerSendRecvRanks("ring", 0), "must be a flock.topology.Graph"),
    (lambda: tu.GetExp2DynamicSendRecvMachineRanks(12, 3, 4, 0), "homogeneous"),
    (lambda: tu.GetExp2DynamicSendRecvMachineRanks(10, 3, 0, 0), "10"),
    (lambda: tu.GetExp2DynamicSendRecvMachineRanks(12, 3, 12, 0), "out of range"),
    (lambda: tu.GetInnerOuterRingDynamicSendRecvRanks(12, 5, 0), "12"),
    (lambda: tu.GetInnerOuterExpo2DynamicSendRecvRanks(12, 4, -1), "out of range"),
    (lambda: tu.DynamicOnePeer(tu.RingGraph(4)).send_ranks(-1, 0), "iteration"),
]


@pytest.mark.parametrize("call,words", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_bad_arguments_raise_when_the_generator_is_made(call, words):
    with pytest.raises(flock.FlockInvalidArgumentError) as info:
        call()
    assert words in str(info.value), str(info.value)
