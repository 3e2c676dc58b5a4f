"""Window ops on torch tensors, with Bluefog's names and arguments (one-sided
asynchronous gossip: win_put, win_accumulate, win_get, push-sum). See
flock/_windows.py and docs/windows.md."""

from flock import _windows as _w
from flock._public import public as _public
from flock.torch import _adapter

__all__ = ["win_create", "win_free", "win_put", "win_put_nonblocking", "win_get",
           "win_get_nonblocking", "win_accumulate", "win_accumulate_nonblocking", "win_wait",
           "win_poll", "win_update", "win_update_then_collect", "win_mutex", "win_lock",
           "get_win_version", "get_current_created_window_names", "win_associated_p",
           "turn_on_win_ops_with_associated_p", "turn_off_win_ops_with_associated_p"]

win_free = _public(_w.win_free)
win_wait = _public(_w.win_wait)
win_poll = _public(_w.win_poll)
win_mutex = _w.win_mutex
win_lock = _w.win_lock
get_win_version = _public(_w.get_win_version)
get_current_created_window_names = _public(_w.get_current_created_window_names)
win_associated_p = _public(_w.win_associated_p)
turn_on_win_ops_with_associated_p = _public(_w.turn_on_win_ops_with_associated_p)
turn_off_win_ops_with_associated_p = _public(_w.turn_off_win_ops_with_associated_p)


@_public
def win_create(tensor, name, zero_init=False):
    """Creates window ``name`` on ``tensor`` (collective: every rank, same order)."""
    return _w.win_create(_adapter, tensor, name, zero_init)


@_public
def win_put_nonblocking(tensor, name, self_weight=None, dst_weights=None, require_mutex=False):
    """Starts writing ``dst_weights[r] * tensor`` into out-neighbour r's slot for this
    rank (default: every out-neighbour, weight 1); then ``tensor *= self_weight``."""
    return _w.win_put_nonblocking(_adapter, tensor, name, self_weight, dst_weights,
                                  require_mutex)


@_public
def win_put(tensor, name, self_weight=None, dst_weights=None, require_mutex=False):
    return _w.win_wait(_w.win_put_nonblocking(_adapter, tensor, name, self_weight, dst_weights,
                                              require_mutex))


@_public
def win_accumulate_nonblocking(tensor, name, self_weight=None, dst_weights=None,
                               require_mutex=False):
    """As win_put_nonblocking, adding into the slots instead of replacing them."""
    return _w.win_put_nonblocking(_adapter, tensor, name, self_weight, dst_weights,
                                  require_mutex, accumulate=True)


@_public
def win_accumulate(tensor, name, self_weight=None, dst_weights=None, require_mutex=False):
    return _w.win_wait(_w.win_put_nonblocking(_adapter, tensor, name, self_weight, dst_weights,
                                              require_mutex, accumulate=True))


@_public
def win_get_nonblocking(name, src_weights=None, require_mutex=False):
    """Starts fetching in-neighbour r's own value into this rank's slot for r, scaled
    by ``src_weights[r]`` (default: every in-neighbour, weight 1)."""
    return _w.win_get_nonblocking(name, src_weights, require_mutex)


@_public
def win_get(name, src_weights=None, require_mutex=False):
    return _w.win_wait(_w.win_get_nonblocking(name, src_weights, require_mutex))


@_public
def win_update(name, self_weight=None, neighbor_weights=None, reset=False, clone=False,
               require_mutex=False):
    """self_weight * own value + sum of neighbor_weights[r] * slot r (default: the
    topology's weights, or 1/(in-degree+1) each), into the window's tensor (returned)."""
    return _w.win_update(_adapter, name, self_weight, neighbor_weights, reset, clone,
                         require_mutex)


@_public
def win_update_then_collect(name, require_mutex=True):
    """Own value plus every slot; the slots start again from 0 (push-sum)."""
    return _w.win_update_then_collect(_adapter, name, require_mutex)
