"""Exceptions raised by flock.

Every error flock raises is a :class:`FlockError`. The subclass tells what kind
of problem it is; the message names the op, the tensor and the ranks involved.
The C++ core reports errors as status codes; the bindings map each code to one
class below (see docs/errors.md).
"""


class FlockError(RuntimeError):
    """Base class of every error raised by flock."""


class FlockInvalidArgumentError(FlockError, ValueError):
    """An argument on this rank is wrong (shape, option, rank number)."""


class FlockMismatchError(FlockError, ValueError):
    """Ranks disagree about an op: shape, dtype, reduction, root or name."""


class FlockNotInitializedError(FlockError):
    """flock was used before ``init()`` or after ``shutdown()``."""


class FlockUnsupportedError(FlockError, TypeError, ValueError):
    """A valid request this build cannot serve (dtype, device). Also a ValueError, which is
    what Bluefog raises for a tensor type it does not support."""


class FlockTransportError(FlockError):
    """The communication library (MPI) failed."""


class FlockAbortedError(FlockError):
    """The op was cancelled, for example because another rank rejected its input."""


class FlockElasticError(FlockError):
    """An elastic job cannot save or restore its state (commit directory, commit file)."""
