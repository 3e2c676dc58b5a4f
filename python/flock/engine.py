"""What the background engine has done so far on this rank."""

from flock._core_loader import core


def engine_counters():
    """A dict of counters: requests, ready_messages, ready_entries, cache_hits,
    response_messages, batches (data calls), fused_batches, fused_tensors,
    bytes, control_bytes, errors. They only grow; compare before and after."""
    return dict(core.engine_counters())
