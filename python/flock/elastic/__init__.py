"""Elastic training, framework-neutral (Horovod's ``hvd.elastic``): see docs/elastic.md.

``State`` / ``ObjectState`` hold what a job commits; ``run`` wraps the training
function so that a job relaunched by ``flockrun --elastic`` resumes from its
last commit. PyTorch's TorchState and ElasticSampler are in flock.torch.elastic.
"""

from flock.elastic._run import run
from flock.elastic._state import HostsUpdatedInterrupt, ObjectState, State

__all__ = ["State", "ObjectState", "HostsUpdatedInterrupt", "run"]
