"""flock for PyTorch: ``import flock.torch as bf`` (Bluefog's names)."""

from flock.basics import (init, is_homogeneous, is_initialized, local_rank,  # noqa: F401
                          local_size, machine_rank, machine_size, mpi_threads_supported,
                          nccl_built, rank, shutdown, size)
from flock.errors import (FlockAbortedError, FlockError, FlockInvalidArgumentError,  # noqa: F401
                          FlockMismatchError, FlockNotInitializedError, FlockTransportError,
                          FlockUnsupportedError)
from flock.reduce_op import Average, Max, Min, Product, ReduceOp, Sum  # noqa: F401
from flock._topology_exports import *  # noqa: F401,F403  (set_topology, ExponentialGraph, ...)
from flock.timeline import timeline_start, timeline_stop  # noqa: F401
from flock.torch.ops import *  # noqa: F401,F403  (allreduce, neighbor_allreduce, ...)
from flock.timeline import (timeline_context, timeline_end_activity,  # noqa: F401
                            timeline_start_activity)
from flock.engine import engine_counters  # noqa: F401
