"""The neighbor ops written once for any array library (see _collectives.py).

Weight arguments are checked here and handed to the core as (rank, weight)
lists. A call this rank cannot make (bad weights, bad tensor) is still handed
over, with the reason and the ranks it names: the core fails it on this rank
and tells those ranks (and the static neighbours), so they fail the same call
instead of waiting for this rank.
"""

from flock import _collectives as c
from flock._args import as_rank, as_rank_list, as_weight, as_weight_map
from flock._core_loader import core


def _on_cuda(adapter, tensor):
    """Whether ``tensor`` is a CUDA tensor, for a call rejected on this rank: neighbor ops
    on CUDA tensors are negotiated, so the rejection must take the same road as the
    peers' calls to reach them."""
    try:
        return c._cuda_stream(adapter, tensor) is not None
    except Exception:  # noqa: BLE001 - not a tensor at all: the error says so already
        return False


def _ranks_arg(what, value, named):
    if value is None:
        return None
    ranks = as_rank_list(what, value)
    named.extend(ranks)
    return ranks


def neighbor_allreduce_nonblocking(adapter, tensor, self_weight=None, src_weights=None,
                                   dst_weights=None, enable_topo_check=True, name=None,
                                   inplace=False, wait_follows=False):
    named = []
    error = None
    try:
        self_w = None if self_weight is None else as_weight("self_weight", self_weight)
        src = (None if src_weights is None else
               as_weight_map("src_weights", src_weights, False, named))
        dst = (None if dst_weights is None else
               as_weight_map("dst_weights", dst_weights, True, named))
    except TypeError as exc:
        error, self_w, src, dst = str(exc), None, None, None
    check = bool(enable_topo_check)
    exported = c._Exported(adapter, tensor)
    error = error or exported.error
    if error is not None:
        handle = core.enqueue_neighbor_allreduce(None, None, None, None, None, check, name,
                                                 local_error=error, named_ranks=named,
                                                 wait_follows=wait_follows,
                                                 cuda=_on_cuda(adapter, tensor))
        return c._register(handle, lambda _: None)
    out = exported.tensor if inplace else adapter.empty_like(exported.tensor)
    out_capsule = None if out is exported.tensor else adapter.export(out)[0]
    stream = c._cuda_stream(adapter, exported.tensor)
    handle = core.enqueue_neighbor_allreduce(exported.capsule, out_capsule, self_w, src, dst, check,
                                             name, exported.override, named_ranks=named,
                                             wait_follows=wait_follows, stream=stream or 0)
    return c._register(handle, lambda _: c._deliver(adapter, tensor, out, inplace),
                       c._stream_of(adapter, exported.tensor, stream))


def neighbor_allgather_nonblocking(adapter, tensor, src_ranks=None, dst_ranks=None,
                                   enable_topo_check=True, name=None, wait_follows=False):
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
                                                 named_ranks=named, wait_follows=wait_follows,
                                                 cuda=_on_cuda(adapter, tensor))
        return c._register(handle, lambda _: None)
    stream = c._cuda_stream(adapter, exported.tensor)
    handle = core.enqueue_neighbor_allgather(exported.capsule, src, dst, name, exported.override,
                                             named_ranks=named, wait_follows=wait_follows,
                                             check=bool(enable_topo_check), stream=stream or 0)
    return c._register(handle,
                       lambda capsule: adapter.import_capsule(capsule, like=exported.tensor),
                       c._stream_of(adapter, exported.tensor, stream))


def pair_gossip_nonblocking(adapter, tensor, target_rank, self_weight=0.5, pair_weight=0.5,
                            name=None, wait_follows=False):
    """self_weight·tensor + pair_weight·(target_rank's tensor); the target must pair with us."""
    try:
        target = as_rank("target_rank", target_rank)
        dst, src = [target], {target: pair_weight}
    except TypeError as error:
        dst = src = str(error)  # reported below
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
        self_w = None if self_weight is None else as_weight("self_weight", self_weight)
        src = (None if src_machine_weights is None else
               as_weight_map("src_machine_weights", src_machine_weights, False, named))
        dst = (None if dst_machine_weights is None else
               as_weight_map("dst_machine_weights", dst_machine_weights, True, named))
    except TypeError as exc:
        error, self_w, src, dst = str(exc), None, None, None
    check = bool(enable_topo_check)
    exported = c._Exported(adapter, tensor)
    error = error or exported.error
    if error is not None:
        handle = core.enqueue_hierarchical_neighbor_allreduce(
            None, None, None, None, None, check, name, local_error=error, named_machines=named,
            wait_follows=wait_follows, cuda=_on_cuda(adapter, tensor))
        return c._register(handle, lambda _: None)
    out = adapter.empty_like(exported.tensor)
    out_capsule = adapter.export(out)[0]
    stream = c._cuda_stream(adapter, exported.tensor)
    handle = core.enqueue_hierarchical_neighbor_allreduce(
        exported.capsule, out_capsule, self_w, src, dst, check, name, exported.override,
        named_machines=named, wait_follows=wait_follows, stream=stream or 0)
    return c._register(handle, lambda _: out, c._stream_of(adapter, exported.tensor, stream))
