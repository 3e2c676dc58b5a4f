"""Reading rank and weight arguments in every form Bluefog programs pass them.

- A *rank* is any integer: ``int``, a numpy integer, a 0-d integer tensor (anything
  with ``__index__``); never ``bool`` and never a float, even a whole one (a float
  rank is almost always a bug in the caller's arithmetic).
- A *rank list* is any ordered sequence of ranks: list, tuple, range, a 1-D numpy
  array or tensor of integers. Strings, dicts and sets are refused (a set has no
  order, and the order of ``src_ranks`` is the order of the result).
- A *weight* is any real number: ``int``, ``float``, numpy floats and integers, a
  0-d tensor; never ``bool`` or a string.
- A *weight map* is a dict {rank: weight} (numpy keys and values welcome), or,
  where the op allows it, a rank list meaning weight 1.0 each.

Every reader raises TypeError naming the argument; the ops turn that into a
FlockInvalidArgumentError on this rank and tell the peers (see _neighbor.py).
"""

import numbers
import operator


def as_rank(what, value):
    """``value`` as a Python int, or TypeError naming ``what``."""
    if type(value) is int:  # the common case, first: these run on every neighbor call
        return value
    if isinstance(value, (bool, float, str, bytes)) or _is_bool_like(value):
        raise TypeError("{} must be an integer rank, got {!r}".format(what, value))
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("{} must be an integer rank, got {!r}".format(what, value)) from None


def as_rank_list(what, value):
    """``value`` (any ordered sequence of ranks) as a list of Python ints."""
    if isinstance(value, (str, bytes, dict, set, frozenset)) or not _is_iterable(value):
        raise TypeError("{} must be a list of ranks, got {!r}".format(what, type(value).__name__))
    if getattr(value, "ndim", 1) != 1:
        raise TypeError("{} must be a 1-D list of ranks, got an array of shape {}".format(
            what, tuple(value.shape)))
    return [as_rank(what, r) for r in value]


def as_weight(what, value):
    """``value`` as a Python float, or TypeError naming ``what``."""
    if type(value) is float:
        return value
    if isinstance(value, (bool, str, bytes)) or _is_bool_like(value):
        raise TypeError("{} must be a number, got {!r}".format(what, value))
    if isinstance(value, numbers.Real):
        return float(value)
    if getattr(value, "ndim", None) == 0:  # a 0-d tensor or array
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise TypeError("{} must be a number, got {!r}".format(what, value))


def as_weight_map(what, value, allow_list, named):
    """{rank: weight} (or, with allow_list, a rank list meaning 1.0 each) as [(rank, weight)].

    Every rank read is appended to ``named``, also when a later entry is bad, so the
    peers this call would have talked to can be told it failed.
    """
    if isinstance(value, dict):
        pairs = []
        for r, w in value.items():
            rank = as_rank(what, r)
            named.append(rank)
            pairs.append((rank, w if type(w) is float else as_weight(_entry(what, rank), w)))
        return pairs
    if allow_list and not isinstance(value, (str, bytes)) and _is_iterable(value):
        ranks = []
        for r in value:
            ranks.append(as_rank(what, r))
            named.append(ranks[-1])
        return [(r, 1.0) for r in ranks]
    kind = "a dict {rank: weight} or a list of ranks" if allow_list else "a dict {rank: weight}"
    raise TypeError("{} must be {}, got {!r}".format(what, kind, type(value).__name__))


def _entry(what, rank):
    return "{}[{}]".format(what, rank)


def _is_iterable(value):
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _is_bool_like(value):
    """numpy.bool_ and bool tensors: integers to operator.index, but not ranks or weights."""
    dtype = getattr(value, "dtype", None)
    return dtype is not None and str(dtype) in ("bool", "torch.bool")
