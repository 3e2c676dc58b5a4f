"""flock for numpy arrays: the same basics and collectives as flock.torch.

Results are new arrays; functions ending in ``_`` write into the given array
(which must then be a writable ndarray).
"""

from flock._ops_api import make_ops as _make_ops
from flock.basics import (init, is_homogeneous, is_initialized, local_rank,  # noqa: F401
                          local_size, machine_rank, machine_size, rank, shutdown, size)
from flock.errors import (FlockAbortedError, FlockError, FlockInvalidArgumentError,  # noqa: F401
                          FlockMismatchError, FlockNotInitializedError, FlockTransportError,
                          FlockUnsupportedError)
from flock import _numpy_adapter as _adapter
from flock.timeline import (timeline_context, timeline_end_activity,  # noqa: F401
                            timeline_start_activity)
from flock.engine import engine_counters  # noqa: F401
from flock.reduce_op import Average, Max, Min, Product, ReduceOp, Sum  # noqa: F401
from flock._topology_exports import *  # noqa: F401,F403  (set_topology, ExponentialGraph, ...)
from flock.timeline import timeline_start, timeline_stop  # noqa: F401


globals().update(_make_ops(_adapter))
