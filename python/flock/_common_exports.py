"""The names flock, flock.torch and flock.numpy all export, in one list so the three
never differ: the basics (init, rank, machine views, ...), the errors, the
reduction ops, the job's topology and Bluefog's generators, the timeline and
the engine counters. ``from flock._common_exports import *`` brings them all;
each framework module adds its ops (and flock.torch its training layer).
"""

from flock._topology_exports import *  # noqa: F401,F403  (set_topology, ExponentialGraph, ...)
from flock._topology_exports import __all__ as _topology_names
from flock.basics import (get_skip_negotiate_stage, init, is_homogeneous,  # noqa: F401
                          is_initialized, local_rank, local_size, machine_rank, machine_size,
                          mpi_threads_supported, nccl_built, rank, resume,
                          set_skip_negotiate_stage, shutdown, size, suspend,
                          unified_mpi_window_model_supported)
from flock.compression import Compression  # noqa: F401
from flock.engine import engine_counters  # noqa: F401
from flock.errors import (FlockAbortedError, FlockElasticError, FlockError,  # noqa: F401
                          FlockInvalidArgumentError, FlockMismatchError,
                          FlockNotInitializedError, FlockTransportError, FlockUnsupportedError)
from flock.reduce_op import Average, Max, Min, Product, ReduceOp, Sum  # noqa: F401
from flock.timeline import (timeline_context, timeline_end_activity,  # noqa: F401
                            timeline_start, timeline_start_activity, timeline_stop)

__all__ = [
    # basics
    "init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank",
    "machine_size", "machine_rank", "is_homogeneous", "mpi_threads_supported",
    "unified_mpi_window_model_supported", "nccl_built", "set_skip_negotiate_stage",
    "get_skip_negotiate_stage", "suspend", "resume",
    # errors
    "FlockError", "FlockInvalidArgumentError", "FlockMismatchError", "FlockNotInitializedError",
    "FlockUnsupportedError", "FlockTransportError", "FlockAbortedError", "FlockElasticError",
    # reduction ops, compression
    "ReduceOp", "Sum", "Average", "Min", "Max", "Product", "Compression",
    # timeline and counters
    "timeline_start", "timeline_stop", "timeline_start_activity", "timeline_end_activity",
    "timeline_context", "engine_counters",
] + list(_topology_names)
