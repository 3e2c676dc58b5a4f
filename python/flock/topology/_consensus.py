"""Average consensus simulated in-process (C++ flock/topology/consensus.h), at any
size the graph fits in memory: x <- W^T x with a sparse W^T split over the cores.

``run_consensus(topo_or_schedule, eps)`` steps from a reproducible random start
until the relative distance to the average is at most ``eps`` or ``max_iterations``
steps have run, and returns ConsensusRun(iterations, converged, errors).
``period_second_eigenvalue_modulus`` / ``predicted_periodic_consensus_iterations``
give a dynamic schedule's rate over one period, from sparse products.
"""

from collections import namedtuple

import numpy as np

from flock.errors import FlockInvalidArgumentError
from flock.topology._convert import as_graph
from flock.topology._dynamic import Schedule
from flock.topology._graph import _core_topology as _t
from flock.topology._views import index_arg

ConsensusRun = namedtuple("ConsensusRun", "iterations converged errors")


def random_start(size, seed=2024):
    """``size`` values uniform in [-1, 1) from std::mt19937(seed): the same everywhere."""
    return _t.random_start(index_arg("size", size), index_arg("seed", seed, 64))


def run_consensus(topo, eps=1e-6, max_iterations=100000, x0=None, seed=2024):
    """Steps x <- W^T x (a graph) or the schedule's mixing graph of each step, from
    ``x0`` (default: random_start(size, seed)). errors[k] is the relative error after
    k steps (errors[0] = 1)."""
    schedule = topo._s if isinstance(topo, Schedule) else None
    graph = None if schedule is not None else as_graph(topo)._g
    size = schedule.size() if schedule is not None else graph.size()
    start = random_start(size, seed) if x0 is None else np.asarray(x0, dtype=np.float64)
    if start.shape != (size,):
        raise FlockInvalidArgumentError(f"run_consensus: x0 must have {size} values, got shape "
                                        f"{start.shape}")
    cap = index_arg("max_iterations", max_iterations, 64)
    if schedule is not None:
        found = _t.run_schedule_consensus(schedule, start, float(eps), cap)
    else:
        found = _t.run_consensus(graph, start, float(eps), cap)
    return ConsensusRun(found[0], found[1], np.asarray(found[2]))


def period_second_eigenvalue_modulus(schedule, period):
    """|lambda_2| of the product of one period's mixing steps."""
    return _t.period_second_eigenvalue_modulus(schedule._s, index_arg("period", period, 64))


def predicted_periodic_consensus_iterations(schedule, period, eps):
    """Steps to shrink the error by ``eps``, in whole periods; None: never."""
    return _t.predicted_periodic_consensus_iterations(schedule._s,
                                                      index_arg("period", period, 64), float(eps))
