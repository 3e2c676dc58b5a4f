"""flock for numpy arrays: the same basics and collectives as flock.torch.

Results are new arrays; functions ending in ``_`` write into the given array
(which must then be a writable ndarray).
"""

from flock import _numpy_adapter as _adapter
from flock._common_exports import *  # noqa: F401,F403  (init, rank, set_topology, ...)
from flock._ops_api import make_ops as _make_ops

globals().update(_make_ops(_adapter))
