"""Shared set-up for tests run on every rank of a flockrun job.

Every test here must make the same collective calls in the same order on every
rank and pass at any world size (1 included): skips depend only on size().
"""

import numpy as np
import pytest

import flock.torch as bf


# Initialized at import so collection-time decisions (needs_ranks) can ask size().
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


def needs_ranks(n):
    """Skips a test below n ranks (the same decision on every rank)."""
    return pytest.mark.skipif(bf.size() < n, reason="needs {} ranks".format(n))


np.seterr(over="ignore")
