"""Emulated machines inside a running test job: flock re-initialized with a machine size.

flock reads FLOCK_LOCAL_SIZE, or Bluefog's BLUEFOG_NODES_PER_MACHINE when only that is
set, at init(); setting it in os.environ first is what Bluefog's own tests do.
"""

import contextlib
import os

import flock.torch as bf

EMULATION_VARIABLES = ["FLOCK_LOCAL_SIZE", "BLUEFOG_NODES_PER_MACHINE"]


@contextlib.contextmanager
def machine_settings(**settings):
    """Runs the block with exactly these emulation variables set (the others unset); flock
    is shut down before and re-initialized as it was after. The block calls init()."""
    saved = {name: os.environ.pop(name, None) for name in EMULATION_VARIABLES}
    bf.shutdown()
    os.environ.update({name: str(value) for name, value in settings.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
        if bf.is_initialized():
            bf.shutdown()
        bf.init()


@contextlib.contextmanager
def fake_machines(local_size, variable="FLOCK_LOCAL_SIZE"):
    """flock re-initialized with `local_size` consecutive ranks per machine, set through
    `variable`; every machine-level view follows. Then flock is as before."""
    with machine_settings(**{variable: local_size}):
        bf.init()
        rank, size = bf.rank(), bf.size()
        assert bf.local_size() == local_size and bf.local_rank() == rank % local_size
        assert bf.machine_size() == size // local_size and bf.machine_rank() == rank // local_size
        assert bf.is_homogeneous()
        yield
