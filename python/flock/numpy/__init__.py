"""flock for numpy arrays: the same basics and collectives as flock.torch.

Results are new arrays; functions ending in ``_`` write into the given array
(which must then be a writable ndarray).
"""

from flock._common_exports import *  # noqa: F401,F403  (init, rank, set_topology, ...)
from flock.numpy._ops import *  # noqa: F401,F403  (allreduce, neighbor_allreduce, ...)
