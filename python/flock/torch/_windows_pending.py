"""Bluefog's window optimizers, named here until flock has them.

A Bluefog program that builds a ``DistributedWinPutOptimizer`` gets a
``FlockUnsupportedError`` that says they are not supported yet and where the work
is tracked, instead of an ``AttributeError`` that reads like a typo. (The window
ops themselves are in flock.torch.windows.)
"""

from flock._public import public
from flock.errors import FlockUnsupportedError

PENDING_ISSUE = "issue 24 (window ops and asynchronous training)"

# Bluefog 0.3's names (bluefog/torch/optimizers.py).
WINDOW_OPTIMIZERS = [
    "DistributedWinPutOptimizer", "DistributedPullGetOptimizer", "DistributedPushSumOptimizer",
]


def _pending(name, kind):
    def not_supported_yet(*args, **kwargs):
        raise FlockUnsupportedError(
            "flock.torch.{} is not supported yet: flock has the window ops (win_put, "
            "win_get, win_accumulate, push-sum) but not yet the window {}; they come "
            "with {}. Drive the window ops from your training loop, or use "
            "DistributedAdaptWithCombineOptimizer; see docs/bluefog-migration.md."
            .format(name, kind, PENDING_ISSUE))

    not_supported_yet.__name__ = not_supported_yet.__qualname__ = name
    not_supported_yet.__doc__ = "Not supported yet: raises FlockUnsupportedError ({}).".format(
        PENDING_ISSUE)
    return not_supported_yet


# public(): the traceback ends at the user's call, in a frame named after it.
for _name in WINDOW_OPTIMIZERS:
    globals()[_name] = public(_pending(_name, "optimizers"))
del _name

__all__ = WINDOW_OPTIMIZERS
