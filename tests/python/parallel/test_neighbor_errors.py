"""Errors of neighbor_allreduce: they raise on the ranks involved, never hang, and
the next op works.

Covered: a dynamic pattern where a rank expects data that is never sent, or is
sent data it did not list (FlockMismatchError with enable_topo_check=True); a
dtype or shape that differs between a sender and its receiver (with and without
the topology check, blocking and nonblocking); bad arguments — self_weight
without src_weights and the reverse, dst_weights without the weights it needs,
a rank out of range, this rank among its own peers, an integer dtype — which
raise on the calling rank (FlockInvalidArgumentError / FlockUnsupportedError)
while the rank it would have talked to fails the same call naming it.

Only ranks 0 and 1 are involved in the failing call. The static topology is
set to disjoint pairs (0,1)(2,3)(4,5) so the ranks a rejected call notifies
(its static neighbours and the ranks it names) are exactly the ranks involved;
ranks 2.. make the same call (same name) as a correct exchange with their own
partner and must succeed. Every rank then runs a correct neighbor_allreduce.
"""

import numpy as np
import pytest
import torch

import flock.torch as bf
from conftest import needs_ranks
from flock import topology as tu


def _partner(rank, size):
    other = rank ^ 1
    return other if other < size else None


def _pairs(size):
    """W of the disjoint pairs (0,1)(2,3)...; an odd last rank is alone."""
    w = np.zeros((size, size))
    for r in range(size):
        p = _partner(r, size)
        if p is None:
            w[r, r] = 1.0
        else:
            w[r, r] = w[r, p] = 0.5
    return w


@pytest.fixture(autouse=True)
def pairs_topology():
    bf.set_topology(_pairs(bf.size()), is_weighted=True)
    yield
    bf.set_topology(tu.ExponentialGraph(bf.size()))


def _x(rank, dtype=torch.float32, shape=(3,)):
    return torch.full(shape, float(rank + 1), dtype=dtype)


def _expected_pair_mean(rank, size):
    p = _partner(rank, size)
    return float(rank + 1) if p is None else (rank + 1 + p + 1) / 2.0


def _correct_pair_exchange(rank, size, name):
    """The failing call's name, as a correct dynamic exchange with this rank's partner."""
    p = _partner(rank, size)
    x = _x(rank)
    if p is None:
        got = bf.neighbor_allreduce(x, self_weight=1.0, src_weights={}, dst_weights=[],
                                    enable_topo_check=True, name=name)
    else:
        got = bf.neighbor_allreduce(x, self_weight=0.5, src_weights={p: 0.5}, dst_weights=[p],
                                    enable_topo_check=True, name=name)
    assert torch.equal(got, torch.full((3,), _expected_pair_mean(rank, size)))


def _next_op_works(rank, size, name):
    # The static pairs topology (weights 0.5): involves ranks 0 and 1 again.
    x = _x(rank)
    got = bf.neighbor_allreduce(x, name="after." + name)
    assert torch.equal(got, torch.full((3,), _expected_pair_mean(rank, size)))
    assert torch.equal(x, _x(rank))


# ---- mismatched dynamic patterns (enable_topo_check=True)

@needs_ranks(2)
def test_expected_data_that_is_never_sent(rank, size):
    # Rank 0 expects rank 1's data; rank 1 receives from rank 0 but sends to nobody.
    name = "mm.never.sent"
    if rank == 0:
        with pytest.raises(bf.FlockMismatchError):
            bf.neighbor_allreduce(_x(0), self_weight=0.5, src_weights={1: 0.5}, dst_weights=[1],
                                  enable_topo_check=True, name=name)
    elif rank == 1:
        with pytest.raises(bf.FlockMismatchError):
            bf.neighbor_allreduce(_x(1), self_weight=0.5, src_weights={0: 0.5}, dst_weights=[],
                                  enable_topo_check=True, name=name)
    else:
        _correct_pair_exchange(rank, size, name)
    _next_op_works(rank, size, name)


@needs_ranks(2)
def test_expected_data_from_a_rank_that_talks_to_nobody(rank, size):
    # Rank 1 neither sends nor receives: rank 0, which waits for it, must fail, not
    # hang. Rank 1's own call has no peer to wait for, so it may complete before
    # rank 0's check message arrives (then it succeeds) or fail if the message is
    # already there; both are correct.
    name = "mm.silent"
    if rank == 0:
        with pytest.raises(bf.FlockMismatchError):
            bf.neighbor_allreduce(_x(0), self_weight=0.5, src_weights={1: 0.5}, dst_weights=[],
                                  enable_topo_check=True, name=name)
    elif rank == 1:
        try:
            got = bf.neighbor_allreduce(_x(1), self_weight=1.0, src_weights={}, dst_weights=[],
                                        enable_topo_check=True, name=name)
            assert torch.equal(got, _x(1))
        except bf.FlockMismatchError:
            pass  # rank 0's check message arrived before rank 1's call completed
    else:
        _correct_pair_exchange(rank, size, name)
    _next_op_works(rank, size, name)


@needs_ranks(2)
def test_data_sent_to_a_rank_that_does_not_expect_it(rank, size):
    # Rank 1 sends to rank 0, which does not list it (rank 0 -> rank 1 is consistent).
    name = "mm.not.expected"
    if rank == 0:
        with pytest.raises(bf.FlockMismatchError):
            bf.neighbor_allreduce(_x(0), self_weight=1.0, src_weights={}, dst_weights=[1],
                                  enable_topo_check=True, name=name)
    elif rank == 1:
        with pytest.raises(bf.FlockMismatchError):
            bf.neighbor_allreduce(_x(1), self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0],
                                  enable_topo_check=True, name=name)
    else:
        _correct_pair_exchange(rank, size, name)
    _next_op_works(rank, size, name)


@needs_ranks(2)
@pytest.mark.parametrize("nonblocking", [False, True], ids=["blocking", "nonblocking"])
@pytest.mark.parametrize("check", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("field", ["dtype", "shape"])
def test_dtype_or_shape_differs_between_neighbours(field, check, nonblocking, rank, size):
    # Ranks 0 and 1 exchange both ways; rank 1's tensor differs. Each is a receiver of
    # the other's tensor, so each rejects it even without the topology check.
    name = "mm.{}.{}.{}".format(field, check, nonblocking)
    if rank in (0, 1):
        dtype = torch.float64 if field == "dtype" and rank == 1 else torch.float32
        shape = (4,) if field == "shape" and rank == 1 else (3,)
        kwargs = dict(self_weight=0.5, src_weights={1 - rank: 0.5}, dst_weights=[1 - rank],
                      enable_topo_check=check, name=name)
        # The message names the pair and what differs (either rank's check may be first).
        names_pair = r"{} differs between rank [01] \((sender|receiver)\) and rank [01]: ".format(
            field)
        with pytest.raises(bf.FlockMismatchError, match=names_pair):
            if nonblocking:
                bf.synchronize(bf.neighbor_allreduce_nonblocking(_x(rank, dtype, shape), **kwargs))
            else:
                bf.neighbor_allreduce(_x(rank, dtype, shape), **kwargs)
    else:
        _correct_pair_exchange(rank, size, name)
    _next_op_works(rank, size, name)


# ---- bad arguments: the caller raises, the rank it would have talked to fails too

# case -> (rank 0's arguments, rank 1's arguments, rank 0's error class, rank 0's dtype).
# Static cases use the pairs topology, whose only link of rank 0 is rank 1.
BAD_ARGUMENTS = {
    "self_weight without src_weights": (dict(self_weight=0.5), dict(), bf.FlockInvalidArgumentError,
                                        torch.float32),
    "src_weights without self_weight": (dict(src_weights={1: 0.5}), dict(),
                                        bf.FlockInvalidArgumentError, torch.float32),
    "dst_weights without src_weights": (dict(self_weight=0.5, dst_weights=[1]),
                                        dict(self_weight=0.5, src_weights={0: 0.5},
                                             dst_weights=[0]),
                                        bf.FlockInvalidArgumentError, torch.float32),
    "dst rank out of range": (dict(self_weight=0.5, src_weights={1: 0.5}, dst_weights="1,size"),
                              dict(self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0]),
                              bf.FlockInvalidArgumentError, torch.float32),
    "negative src rank": (dict(self_weight=0.5, src_weights={1: 0.25, -1: 0.25}, dst_weights=[1]),
                          dict(self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0]),
                          bf.FlockInvalidArgumentError, torch.float32),
    "self in dst_weights": (dict(self_weight=0.5, src_weights={1: 0.5},
                                 dst_weights={0: 1.0, 1: 1.0}),
                            dict(self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0]),
                            bf.FlockInvalidArgumentError, torch.float32),
    "self in src_weights": (dict(self_weight=0.5, src_weights={0: 0.25, 1: 0.25}, dst_weights=[1]),
                            dict(self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0]),
                            bf.FlockInvalidArgumentError, torch.float32),
    "integer dtype": (dict(), dict(), bf.FlockUnsupportedError, torch.int32),
    "integer dtype, dynamic": (dict(self_weight=0.5, src_weights={1: 0.5}, dst_weights=[1]),
                               dict(self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0]),
                               bf.FlockUnsupportedError, torch.int64),
}


def _resolve(kwargs, size):
    kwargs = dict(kwargs)
    if kwargs.get("dst_weights") == "1,size":
        kwargs["dst_weights"] = [1, size]
    return kwargs


@needs_ranks(2)
@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_arguments_fail_the_caller_and_its_peer(case, rank, size):
    mine, peers, error, dtype = BAD_ARGUMENTS[case]
    name = "bad." + case.replace(" ", "_")
    if rank == 0:
        x = _x(0, dtype)
        before = x.clone()
        with pytest.raises(error):
            bf.neighbor_allreduce(x, name=name, **_resolve(mine, size))
        assert torch.equal(x, before)
    elif rank == 1:
        # Rank 1 would have exchanged with rank 0: it fails instead of waiting for it.
        with pytest.raises(bf.FlockError, match=r"\brank 0\b"):
            bf.neighbor_allreduce(_x(1), name=name, **peers)
    else:
        _correct_pair_exchange(rank, size, name)
    _next_op_works(rank, size, name)


@needs_ranks(2)
def test_bad_arguments_nonblocking(rank, size):
    # The error may come at submission or at synchronize: either way it reaches the caller.
    name = "bad.nonblocking"
    if rank == 0:
        with pytest.raises(bf.FlockInvalidArgumentError):
            bf.synchronize(bf.neighbor_allreduce_nonblocking(
                _x(0), self_weight=0.5, src_weights={1: 0.5}, dst_weights=[1, 0], name=name))
    elif rank == 1:
        with pytest.raises(bf.FlockError, match=r"\brank 0\b"):
            bf.synchronize(bf.neighbor_allreduce_nonblocking(
                _x(1), self_weight=0.5, src_weights={0: 0.5}, dst_weights=[0], name=name))
    else:
        _correct_pair_exchange(rank, size, name)
    _next_op_works(rank, size, name)


@pytest.mark.parametrize("case", ["self_weight only", "integer dtype", "rank out of range"])
def test_every_rank_passes_bad_arguments(case, rank, size):
    # Each rank raises its own error (checked before anything is sent), at any size.
    name = "allbad." + case.replace(" ", "_")
    if case == "self_weight only":
        with pytest.raises(bf.FlockInvalidArgumentError):
            bf.neighbor_allreduce(_x(rank), self_weight=0.5, name=name)
    elif case == "integer dtype":
        with pytest.raises(bf.FlockUnsupportedError):
            bf.neighbor_allreduce(_x(rank, torch.int32), name=name)
    else:
        with pytest.raises(bf.FlockInvalidArgumentError):
            bf.neighbor_allreduce(_x(rank), self_weight=0.5, src_weights={}, dst_weights=[size],
                                  name=name)
    _next_op_works(rank, size, name)
