"""Bluefog's collective helpers that complete a dynamic topology from one side.

``InferSourceFromDestinationRanks(dst_ranks)``: every rank names whom it sends
to; each learns who sends to it. ``InferDestinationFromSourceRanks(src_ranks)``:
the other way round. Both are collective (every rank calls, after ``init()``).

One allgather of a fixed-size row per rank: ``[rejected, m_0, ..., m_{n-1}]``
with m_j = 1 when the rank named j. A rank whose list is invalid (not integers,
out of range, duplicates, itself) raises FlockInvalidArgumentError and the
others raise FlockAbortedError naming it, so no rank waits forever.

With ``construct_adjacency_matrix=True`` the result also holds W (n x n): W[i][j]
> 0 for every edge i -> j and for i == j, each column divided by its sum so that
every node averages what it receives (Bluefog divides by row sums instead,
which is only right for symmetric graphs).
"""

import numpy as np

from flock._agreement import allgather_rows
from flock._args import as_rank_list
from flock._core_loader import core
from flock._public import publish
from flock.errors import FlockAbortedError, FlockInvalidArgumentError


def InferSourceFromDestinationRanks(dst_ranks, construct_adjacency_matrix=False):
    """Returns the sorted ranks that list this rank in their ``dst_ranks``."""
    return _infer("InferSourceFromDestinationRanks", "dst_ranks", dst_ranks, False,
                  construct_adjacency_matrix)


def InferDestinationFromSourceRanks(src_ranks, construct_adjacency_matrix=False):
    """Returns the sorted ranks that list this rank in their ``src_ranks``."""
    return _infer("InferDestinationFromSourceRanks", "src_ranks", src_ranks, True,
                  construct_adjacency_matrix)


def _infer(what, arg_name, ranks, lists_are_sources, construct_adjacency_matrix):
    size, rank = core.size(), core.rank()
    row = np.zeros((1, size + 1), dtype=np.uint8)
    error = _check_rank_list(what, arg_name, ranks, rank, size)
    if error is None:
        row[0, [1 + int(r) for r in ranks]] = 1
    else:
        row[0, 0] = 1
    table = allgather_rows(row, "flock.topology." + what)
    if error is not None:
        raise FlockInvalidArgumentError(error)
    rejected = np.flatnonzero(table[:, 0]).tolist()
    if rejected:
        raise FlockAbortedError(
            "{} was cancelled because rank(s) {} passed an invalid {} (see the error raised "
            "there)".format(what, ", ".join(map(str, rejected)), arg_name))
    named = table[:, 1:].astype(bool)          # named[s, j]: rank s listed j
    result = np.flatnonzero(named[:, rank]).tolist()
    if not construct_adjacency_matrix:
        return result
    edges = named.T if lists_are_sources else named   # edges[i, j]: i sends to j
    w = edges.astype(np.float64) + np.eye(size)
    return result, w / w.sum(axis=0, keepdims=True)


def _check_rank_list(what, arg_name, ranks, rank, size):
    """None when ``ranks`` is a valid list of other ranks, else the error message."""
    try:
        ranks = as_rank_list(arg_name, ranks)
    except TypeError as error:
        return "{}: {}".format(what, error)
    for r in ranks:
        if not 0 <= r < size:
            return "{}: rank {} in {} is out of range [0, {})".format(what, r, arg_name, size)
    if len(set(ranks)) != len(ranks):
        return "{}: {} = {} lists a rank twice".format(what, arg_name, ranks)
    if rank in ranks:
        return "{}: {} = {} contains this rank ({}) itself".format(what, arg_name, ranks, rank)
    return None


publish(globals(), [
    "InferSourceFromDestinationRanks", "InferDestinationFromSourceRanks"])
