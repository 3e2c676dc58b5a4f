"""The public API's edge: flock's errors reach the user from the call they made.

A FlockError raised inside flock travels through several of flock's own frames
(the op wrapper, the collective, synchronize, ...). Printed in full, the user's
traceback ends in four frames of flock internals that say nothing about their
mistake. ``public(fn)`` cuts the traceback at the public function: the user
sees their own line, one line naming the flock function, and the message.

Only FlockError is trimmed: any other exception inside flock is a bug in flock,
and its full traceback is what a bug report needs. With FLOCK_LOG_LEVEL=debug
(or trace) nothing is trimmed.
"""

import functools
from typing import Any, Callable, TypeVar

from flock._core_loader import core
from flock.errors import FlockError

# Typed so that IDEs and type checkers show the wrapped function's own signature.
_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def public(fn: _Fn) -> _Fn:
    """``fn`` with its FlockErrors' tracebacks cut at its own frame."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except FlockError as error:
            if core.logs_debug():
                raise
            raise error.with_traceback(None)  # flock's own frames hidden (FLOCK_LOG_LEVEL=debug)

    # Tracebacks name a frame by its code object: name this one after the function.
    names = {"co_name": fn.__name__}
    if hasattr(call.__code__, "co_qualname"):  # Python >= 3.11 prints the qualified name
        names["co_qualname"] = getattr(fn, "__qualname__", fn.__name__)
    call.__code__ = call.__code__.replace(**names)
    return call


def publish(namespace, names):
    """Wraps each of ``names`` in the module dict ``namespace`` with ``public``."""
    for name in names:
        namespace[name] = public(namespace[name])
