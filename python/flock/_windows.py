"""The window ops — one-sided win_put, win_accumulate and win_get, win_update, the
window mutexes and push-sum's associated p — written once for any array library
(``adapter``: see _collectives.py). How they run: docs/windows.md.

A window is the tensor given to ``win_create`` (its own value, which neighbours'
``win_get`` read and ``win_update`` overwrites) plus one slot per in-neighbour of
the topology in force then. ``win_create`` and ``win_free`` are collective; the
other ops are one-sided: they involve only their peers, whose engine threads serve
them while their own threads compute.
"""

import contextlib

from flock import _collectives as c
from flock._args import as_rank_list, as_weight, as_weight_map
from flock._core_loader import core
from flock.errors import FlockInvalidArgumentError

# name -> the tensor given to win_create, in creation order.
_tensors = {}


def _weights(what, value):
    """None, or [(rank, weight)] from a dict (or a list of ranks: weight 1 each)."""
    if value is None:
        return None
    try:
        return as_weight_map(what, value, True, [])
    except TypeError as error:
        raise FlockInvalidArgumentError(str(error)) from None


def _number(what, value):
    if value is None:
        return None
    try:
        return as_weight(what, value)
    except TypeError as error:
        raise FlockInvalidArgumentError(str(error)) from None


def _window_tensor(adapter, tensor, what):
    """The caller's tensor itself (windows work in its memory), exported."""
    exported = c._Exported(adapter, tensor)
    if exported.error is not None:
        raise FlockInvalidArgumentError("{}: {}".format(what, exported.error))
    if not adapter.same_memory(exported.tensor, tensor):
        raise FlockInvalidArgumentError(
            "{}: the tensor must be contiguous (a window works in its memory)".format(what))
    return exported


def win_create(adapter, tensor, name, zero_init=False):
    """Creates window ``name`` on ``tensor`` (collective); returns True."""
    exported = _window_tensor(adapter, tensor, "win_create '{}'".format(name))
    core.win_create(exported.capsule, name, bool(zero_init), exported.override)
    _tensors[name] = tensor
    return True


def win_free(name=None):
    """Frees window ``name``, or every window (collective); returns True."""
    core.win_free(name)
    if name is None:
        _tensors.clear()
    else:
        _tensors.pop(name, None)
    return True


def free_all_before_shutdown():
    """shutdown() frees the windows left (collective, as shutdown is): a rank must not
    leave while another still puts to it."""
    try:
        if core.is_initialized() and core.win_names():
            core.win_free(None)
    finally:
        _tensors.clear()


def win_put_nonblocking(adapter, tensor, name, self_weight=None, dst_weights=None,
                        require_mutex=False, accumulate=False):
    what = "win_accumulate" if accumulate else "win_put"
    exported = _window_tensor(adapter, tensor, "{} '{}'".format(what, name))
    handle = core.enqueue_win_put(exported.capsule, name, _number("self_weight", self_weight),
                                  _weights("dst_weights", dst_weights), bool(require_mutex),
                                  accumulate, exported.override)
    return c._register(handle, lambda _: True)


def win_get_nonblocking(name, src_weights=None, require_mutex=False):
    handle = core.enqueue_win_get(name, _weights("src_weights", src_weights), bool(require_mutex))
    return c._register(handle, lambda _: True)


def win_wait(handle):
    """Waits for a window op; True once done (raises its error)."""
    c.synchronize(handle)
    return True


def win_poll(handle):
    return c.poll(handle)


def win_update(adapter, name, self_weight=None, neighbor_weights=None, reset=False,
               clone=False, require_mutex=False):
    """The window's value combined with its slots; written into the window's tensor
    (returned), or into a copy with ``clone=True``."""
    tensor = _tensors.get(name)
    if tensor is None:
        raise FlockInvalidArgumentError("win_update: there is no window '{}'".format(name))
    out = adapter.copy(tensor) if clone else tensor
    capsule, override = adapter.export(out)
    core.win_update(name, capsule, _number("self_weight", self_weight),
                    _weights("neighbor_weights", neighbor_weights), bool(reset),
                    bool(require_mutex), override)
    return out


def win_update_then_collect(adapter, name, require_mutex=True):
    """The window's value plus every slot, which start again from 0 (push-sum)."""
    ranks = core.win_versions(name).keys()
    return win_update(adapter, name, 1.0, {r: 1.0 for r in ranks}, reset=True,
                      require_mutex=require_mutex)


def get_win_version(name):
    """{in-neighbour: puts (and gets) since the last win_update}."""
    return dict(core.win_versions(name))


def get_current_created_window_names():
    return list(core.win_names())


def win_associated_p(name):
    return core.win_associated_p(name)


def turn_on_win_ops_with_associated_p():
    core.set_win_ops_with_p(True)


def turn_off_win_ops_with_associated_p():
    core.set_win_ops_with_p(False)


@contextlib.contextmanager
def win_mutex(name, for_self=False, ranks=None):
    """Holds the mutexes of ``ranks`` (default: out-neighbours): their slots for this
    rank, or with ``for_self`` this rank's slots for them."""
    try:
        ranks = None if ranks is None else as_rank_list("ranks", ranks)
    except TypeError as error:
        raise FlockInvalidArgumentError(str(error)) from None
    if for_self:
        core.win_lock_own_slots(name, ranks, False)
    else:
        c.synchronize(core.enqueue_win_mutex(name, ranks, False))
    try:
        yield
    finally:
        if for_self:
            core.win_lock_own_slots(name, ranks, True)
        else:
            c.synchronize(core.enqueue_win_mutex(name, ranks, True))


@contextlib.contextmanager
def win_lock(name):
    """Holds every slot of this rank's window ``name`` (in- and out-neighbours):
    ops made with require_mutex wait until it is let go."""
    versions = core.win_versions(name)  # raises for an unknown window
    ranks = sorted(set(versions) | set(core.out_neighbor_ranks()))
    core.win_lock_own_slots(name, ranks, False)
    try:
        yield
    finally:
        core.win_lock_own_slots(name, ranks, True)

