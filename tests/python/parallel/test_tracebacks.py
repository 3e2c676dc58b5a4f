"""Errors read as errors: a FlockError's traceback ends at the flock call the user made
(one frame named after it), not in flock's internals; FLOCK_LOG_LEVEL=debug keeps them.

Each case fails the same way on every rank (a local argument error, or a mismatch
every rank sees), so the tests make the same collective calls everywhere.
"""

import os
import traceback

import pytest
import torch

import flock.torch as bf
from conftest import needs_ranks


def _flock_frames(excinfo):
    """(file, function) of the traceback's frames outside this test file."""
    frames = traceback.extract_tb(excinfo.value.__traceback__)
    return [(os.path.basename(f.filename), f.name) for f in frames
            if os.path.basename(f.filename) != os.path.basename(__file__)]


CASES = {
    "allreduce": lambda r: bf.allreduce(torch.ones(2), op="median"),
    # A bad argument of a nonblocking op is submitted (the other ranks must not wait)
    # and raised where the op's result is collected.
    "synchronize.bad_op": lambda r: bf.synchronize(
        bf.allreduce_nonblocking(torch.ones(2), op="median")),
    "neighbor_allreduce": lambda r: bf.neighbor_allreduce(torch.ones(2), self_weight=0.5),
    "set_topology": lambda r: bf.set_topology(bf.RingGraph(bf.size() + 1)),
    "synchronize": lambda r: bf.synchronize(10 ** 9),
    "broadcast_parameters": lambda r: bf.broadcast_parameters({"w": torch.ones(1)}, root_rank=-1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_traceback_ends_at_the_public_call(case, rank):
    with pytest.raises(bf.FlockError) as excinfo:
        CASES[case](rank)
    frames = _flock_frames(excinfo)
    assert frames == [("_public.py", case.split(".")[0])]


@needs_ranks(2)
def test_a_mismatch_found_in_the_engine_ends_at_the_call_too(rank, size):
    with pytest.raises(bf.FlockMismatchError) as excinfo:
        bf.allreduce(torch.ones(2 + (rank == 0)), name="tb.mismatch")
    assert _flock_frames(excinfo) == [("_public.py", "allreduce")]
    error = excinfo.value
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    assert "_collectives.py" not in text and "ranks disagree on the shape" in text


def test_an_optimizer_step_ends_at_step(rank):
    model = torch.nn.Linear(2, 1)
    opt = bf.DistributedAdaptWithCombineOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                  model)
    opt.self_weight = 0.5  # without src_weights: refused by every rank's neighbor_allreduce
    model(torch.ones(1, 2)).sum().backward()
    with pytest.raises(bf.FlockError) as excinfo:
        opt.step()
    assert [name for _, name in _flock_frames(excinfo)] == ["step"]


def test_debug_logging_keeps_flocks_own_frames(monkeypatch):
    # FLOCK_LOG_LEVEL is parsed at init(): set it, re-initialize, put it back.
    monkeypatch.setenv("FLOCK_LOG_LEVEL", "debug")
    bf.shutdown()
    bf.init()
    try:
        with pytest.raises(bf.FlockError) as excinfo:
            bf.allreduce(torch.ones(2), op="median")
    finally:
        monkeypatch.delenv("FLOCK_LOG_LEVEL")
        bf.shutdown()
        bf.init()
    assert len(_flock_frames(excinfo)) > 1
