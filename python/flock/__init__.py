"""flock: decentralized deep-learning communication over MPI.

Use it through a framework module: ``import flock.torch as bf`` for PyTorch
tensors, ``import flock.numpy as fnp`` for numpy arrays. Both expose the same
basics (init, rank, size, ...) and collectives (allreduce, broadcast, allgather).
"""

from flock._common_exports import *  # noqa: F401,F403  (init, rank, set_topology, ...)
from flock._core_loader import core as _core

__version__ = _core.__version__
