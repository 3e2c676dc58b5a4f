"""Ranks, sizes and machines agree with what mpirun says."""

import os

import torch

import flock
import flock.torch as bf


def test_rank_and_size_match_mpirun(rank, size):
    assert rank == int(os.environ.get("OMPI_COMM_WORLD_RANK", 0))
    assert size == int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1))


def test_machine_layout(rank, size):
    # One host: every rank shares memory with every other (unless FLOCK_LOCAL_SIZE fakes machines).
    local = int(os.environ.get("FLOCK_LOCAL_SIZE", 0)) or size
    assert bf.local_size() == min(local, size)
    assert bf.local_rank() == rank % local
    assert bf.machine_size() == size // bf.local_size()
    assert bf.machine_rank() == rank // bf.local_size()
    assert bf.is_homogeneous() == (size % local == 0)


def test_threads_and_backends():
    assert bf.mpi_threads_supported() is True
    assert bf.nccl_built() is False  # scripts/setup.sh builds the CPU configuration
    assert flock.__version__


def test_every_rank_sees_the_same_world(rank, size):
    ranks = bf.allgather(torch.tensor([rank]))
    assert ranks.tolist() == list(range(size))


def test_bluefog_compatibility_switches(rank, size):
    assert bf.get_skip_negotiate_stage() is False
    bf.set_skip_negotiate_stage(True)
    try:
        assert bf.get_skip_negotiate_stage() is True
        # Ops behave the same: neighbor ops never negotiate, global ones still match by name.
        y = bf.neighbor_allreduce(torch.ones(3), name="compat.neighbor")
        assert torch.allclose(y, torch.ones(3))
    finally:
        bf.set_skip_negotiate_stage(False)
    bf.suspend()
    bf.resume()
    assert bf.allreduce(torch.tensor([1.0]), op="sum", name="compat.after").item() == size
