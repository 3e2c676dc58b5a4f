"""flock: decentralized deep-learning communication over MPI.

Use it through a framework module: ``import flock.torch as bf`` for PyTorch
tensors, ``import flock.numpy as fnp`` for numpy arrays. Both expose the same
basics (init, rank, size, ...) and collectives (allreduce, broadcast, allgather).
"""

from flock.errors import (FlockAbortedError, FlockError, FlockInvalidArgumentError,  # noqa: F401
                          FlockMismatchError, FlockNotInitializedError, FlockTransportError,
                          FlockUnsupportedError)
from flock.basics import (init, is_homogeneous, is_initialized, local_rank,  # noqa: F401
                          local_size, machine_rank, machine_size, mpi_threads_supported,
                          nccl_built, rank, shutdown, size)
from flock.reduce_op import Average, Max, Min, Product, ReduceOp, Sum  # noqa: F401
from flock._topology_exports import *  # noqa: F401,F403  (set_topology, ExponentialGraph, ...)
from flock.timeline import timeline_start, timeline_stop  # noqa: F401
from flock._core_loader import core as _core

__version__ = _core.__version__
