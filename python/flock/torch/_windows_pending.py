"""Bluefog's window ops and window optimizers, named here until flock has them.

A Bluefog program that calls ``bf.win_create`` (asynchronous push-sum consensus,
push-DIGing) or builds a ``DistributedWinPutOptimizer`` gets a
``FlockUnsupportedError`` that says window ops are not supported yet and where the
work is tracked, instead of an ``AttributeError`` that reads like a typo. The
window issue replaces this module with the real ops.
"""

from flock._public import public
from flock.errors import FlockUnsupportedError

PENDING_ISSUE = "issue 24 (window ops and asynchronous training)"

# Bluefog 0.3's names (bluefog/torch/mpi_ops.py and optimizers.py).
WINDOW_OPS = [
    "win_create", "win_free", "win_put", "win_put_nonblocking", "win_get",
    "win_get_nonblocking", "win_accumulate", "win_accumulate_nonblocking", "win_wait",
    "win_poll", "win_update", "win_update_then_collect", "win_mutex", "win_lock",
    "get_win_version", "get_current_created_window_names", "win_associated_p",
    "turn_on_win_ops_with_associated_p", "turn_off_win_ops_with_associated_p",
]
WINDOW_OPTIMIZERS = [
    "DistributedWinPutOptimizer", "DistributedPullGetOptimizer", "DistributedPushSumOptimizer",
]


def _pending(name, kind):
    def not_supported_yet(*args, **kwargs):
        raise FlockUnsupportedError(
            "flock.torch.{} is not supported yet: flock has no window {} (one-sided "
            "win_put / win_get / win_accumulate, push-sum); they come with {}. "
            "Synchronous neighbor_allreduce (or DistributedAdaptWithCombineOptimizer) "
            "covers the same algorithms without windows; see docs/bluefog-migration.md."
            .format(name, kind, PENDING_ISSUE))

    not_supported_yet.__name__ = not_supported_yet.__qualname__ = name
    not_supported_yet.__doc__ = "Not supported yet: raises FlockUnsupportedError ({}).".format(
        PENDING_ISSUE)
    return not_supported_yet


# public(): the traceback ends at the user's call, in a frame named after it.
for _name in WINDOW_OPS:
    globals()[_name] = public(_pending(_name, "ops"))
for _name in WINDOW_OPTIMIZERS:
    globals()[_name] = public(_pending(_name, "optimizers"))
del _name

__all__ = WINDOW_OPS + WINDOW_OPTIMIZERS
