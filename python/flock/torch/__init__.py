"""flock for PyTorch: ``import flock.torch as bf`` (Bluefog's names)."""

from flock._common_exports import *  # noqa: F401,F403  (init, rank, set_topology, ...)
from flock.torch.ops import *  # noqa: F401,F403  (allreduce, neighbor_allreduce, ...)
from flock.torch.optim import *  # noqa: F401,F403  (Distributed*Optimizer, CommunicationType)
from flock.torch.windows import *  # noqa: F401,F403  (win_put, win_get, push-sum, ...)
from flock.torch.utility import (allreduce_parameters, broadcast_object,  # noqa: F401
                                 broadcast_optimizer_state, broadcast_parameters)
from flock.torch import elastic  # noqa: F401,E402  (bf.elastic: TorchState, run, ...)
