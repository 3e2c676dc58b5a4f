"""flock for PyTorch: ``import flock.torch as bf`` (Bluefog's names)."""

from flock.basics import (get_skip_negotiate_stage, init, is_homogeneous,  # noqa: F401
                          is_initialized, local_rank, local_size, machine_rank, machine_size,
                          mpi_threads_supported, nccl_built, rank, resume,
                          set_skip_negotiate_stage, shutdown, size, suspend,
                          unified_mpi_window_model_supported)
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
from flock.torch.optim import *  # noqa: F401,F403  (Distributed*Optimizer, CommunicationType)
from flock.torch._windows_pending import *  # noqa: F401,F403  (win_*: not supported yet)
from flock.torch.utility import (allreduce_parameters, broadcast_object,  # noqa: F401
                                 broadcast_optimizer_state, broadcast_parameters)
