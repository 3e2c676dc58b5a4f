"""The neighbor ops written once for any array library (see _collectives.py).

Weight arguments are checked here and handed to the core as (rank, weight)
lists. A call this rank cannot make (bad weights, bad tensor) is still handed
over, with the reason and the ranks it names: the core fails it on this rank
and tells those ranks (and the static neighbours), so they fail the same call
instead of waiting for this rank.
"""

import numbers

from flock import _collectives as c
from flock._core_loader import core


def _rank_arg(what, value, named):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("{} must hold integer ranks, got {!r}".format(what, value))
    named.append(int(value))
    return int(value)


def _weight_arg(what, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("{} must be a number, got {!r}".format(what, value))
    return float(value)


def _weights_arg(what, value, named, allow_list):
    """{rank: weight} (or, with allow_list, [rank, ...] meaning weight 1.0) -> [(rank, weight)]."""
    if isinstance(value, dict):
        return [(_rank_arg(what, r, named), _weight_arg("{}[{}]".format(what, r), w))
                for r, w in value.items()]
    if allow_list and isinstance(value, (list, tuple)):
        return [(_rank_arg(what, r, named), 1.0) for r in value]
    kind = "a dict {rank: weight} or a list of ranks" if allow_list else "a dict {rank: weight}"
    raise TypeError("{} must be {}, got {!r}".format(what, kind, type(value).__name__))


def _ranks_arg(what, value, named):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise TypeError("{} must be a list of ranks, got {!r}".format(what, type(value).__name__))
    return [_rank_arg(what, r, named) for r in value]


def neighbor_allreduce_nonblocking(adapter, tensor, self_weight=None, src_weights=None,
                                   dst_weights=None, enable_topo_check=True, name=None,
                                   inplace=False, wait_follows=False):
    named = []
    error = None
    try:
        self_w = None if self_weight is None else _weight_arg("self_weight", self_weight)
        src = None if src_weights is None else _weights_arg("src_weights", src_weights, named, False)
        dst = None if dst_weights is None else _weights_arg("dst_weights", dst_weights, named, True)
    except TypeError as exc:
        error, self_w, src, dst = str(exc), None, None, None
    check = bool(enable_topo_check)
    exported = c._Exported(adapter, tensor)
    error = error or exported.error
    if error is not None:
        handle = core.enqueue_neighbor_allreduce(None, None, None, None, None, check, name,
                                                 local_error=error, named_ranks=named,
                                                 wait_follows=wait_follows)
        return c._register(handle, lambda _: None)
    out = exported.tensor if inplace else adapter.empty_like(exported.tensor)
    out_capsule = None if out is exported.tensor else adapter.export(out)[0]
    handle = core.enqueue_neighbor_allreduce(exported.capsule, out_capsule, self_w, src, dst, check,
                                             name, exported.override, named_ranks=named,
                                             wait_follows=wait_follows)
    return c._register(handle, lambda _: c._deliver(adapter, tensor, out, inplace))


def neighbor_allgather_nonblocking(adapter, tensor, src_ranks=None, dst_ranks=None, name=None,
                                   wait_follows=False):
    named = []
    error = None
    try:
        src = _ranks_arg("src_ranks", src_ranks, named)
        dst = _ranks_arg("dst_ranks", dst_ranks, named)
    except TypeError as exc:
        error, src, dst = str(exc), None, None
    exported = c._Exported(adapter, tensor)
    error = error or exported.error
    if error is not None:
        handle = core.enqueue_neighbor_allgather(None, None, None, name, local_error=error,
                                                 named_ranks=named, wait_follows=wait_follows)
        return c._register(handle, lambda _: None)
    handle = core.enqueue_neighbor_allgather(exported.capsule, src, dst, name, exported.override,
                                             named_ranks=named, wait_follows=wait_follows)
    return c._register(handle,
                       lambda capsule: adapter.import_capsule(capsule, like=exported.tensor))


def pair_gossip_nonblocking(adapter, tensor, target_rank, self_weight=0.5, pair_weight=0.5,
                            name=None, wait_follows=False):
    """self_weight·tensor + pair_weight·(target_rank's tensor); the target must pair with us."""
    if isinstance(target_rank, numbers.Integral) and not isinstance(target_rank, bool):
        dst = [int(target_rank)]
        src = {int(target_rank): pair_weight}
    else:
        dst = src = "target_rank must be an int, got {!r}".format(target_rank)  # reported below
    if isinstance(dst, str):
        named = []
        handle = core.enqueue_neighbor_allreduce(None, None, None, None, None, True, name,
                                                 local_error=dst, named_ranks=named,
                                                 wait_follows=wait_follows)
        return c._register(handle, lambda _: None)
    return neighbor_allreduce_nonblocking(adapter, tensor, self_weight, src, dst, True, name,
                                          wait_follows=wait_follows)


def hierarchical_neighbor_allreduce_nonblocking(adapter, tensor, self_weight=None,
                                                src_machine_weights=None,
                                                dst_machine_weights=None,
                                                enable_topo_check=False, name=None,
                                                wait_follows=False):
    named = []
    error = None
    try:
        self_w = None if self_weight is None else _weight_arg("self_weight", self_weight)
        src = (None if src_machine_weights is None else
               _weights_arg("src_machine_weights", src_machine_weights, named, False))
        dst = (None if dst_machine_weights is None else
               _weights_arg("dst_machine_weights", dst_machine_weights, named, True))
    except TypeError as exc:
        error, self_w, src, dst = str(exc), None, None, None
    check = bool(enable_topo_check)
    exported = c._Exported(adapter, tensor)
    error = error or exported.error
    if error is not None:
        handle = core.enqueue_hierarchical_neighbor_allreduce(
            None, None, None, None, None, check, name, local_error=error, named_machines=named,
            wait_follows=wait_follows)
        return c._register(handle, lambda _: None)
    out = adapter.empty_like(exported.tensor)
    out_capsule = adapter.export(out)[0]
    handle = core.enqueue_hierarchical_neighbor_allreduce(
        exported.capsule, out_capsule, self_w, src, dst, check, name, exported.override,
        named_machines=named, wait_follows=wait_follows)
    return c._register(handle, lambda _: out)
