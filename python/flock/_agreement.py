"""The small allgathers flock makes for itself, on numpy rows: every rank's record
when agreeing on a topology, the rank lists of the Infer* helpers.

Straight on the collectives with the numpy adapter, not through flock.numpy, so the
topology modules do not depend on a framework module (which imports them).
"""

from flock import _collectives
from flock import _numpy_adapter


def allgather_rows(rows, name):
    """Every rank's ``rows`` (a 2-D numpy array, the same width on every rank), stacked."""
    handle = _collectives.allgather_nonblocking(_numpy_adapter, rows, name, wait_follows=True)
    return _collectives.synchronize(handle)
