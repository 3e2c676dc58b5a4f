"""Set-up for the fake-device GPU tests, run on every rank of a flockrun job by
scripts/test_gpu.sh with flock's fake-device package first on PYTHONPATH.

As in tests/python/parallel, every test makes the same collective calls in the
same order on every rank and passes at any world size.
"""

import os
import sys

import numpy as np
import pytest

# The neighbor ops' numpy reference and machine emulation, shared with the CPU tests.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parallel"))

import flock.torch as bf

bf.init()


@pytest.fixture(scope="session", autouse=True)
def flock_runtime():
    yield
    bf.shutdown()


@pytest.fixture
def rank():
    return bf.rank()


@pytest.fixture
def size():
    return bf.size()


@pytest.fixture
def device():
    """The device flock picks: the local rank modulo the fake device count (4)."""
    return bf.rank() % 4  # one host: the rank among its host's ranks


@pytest.fixture
def stream(device):
    """The caller's stream of a test (a non-blocking stream on the rank's device)."""
    from fake_cuda import ADAPTER, Stream
    made = Stream(device)
    ADAPTER.stream = made
    yield made
    ADAPTER.stream = None


@pytest.fixture
def rng(rank):
    return np.random.default_rng(1234 + rank)
