"""flock.topology: the graphs neighbour averaging runs over, as flock's own Graph.

Bluefog's ``topology_util``, whose generators return networkx DiGraphs, is
``flock.topology_util`` (built on this module). Everything here works without
``init()`` except the two collective Infer* helpers.

- ``Graph``: flock's weighted directed graph (W[i][j] = weight of i -> j; self loops
  are self weights), readable like a ``networkx.DiGraph``; ``to_networkx()``,
  ``Graph.from_networkx(g)``, ``to_numpy()``, ``Graph.from_numpy(w)``.
  Every function taking a topology also takes a networkx DiGraph or a square
  numpy array.
- Static generators: ExponentialTwoGraph, ExponentialGraph, SymmetricExponentialGraph,
  MeshGrid2DGraph, StarGraph, RingGraph, FullyConnectedGraph, CirculantGraph.
- Helpers: IsTopologyEquivalent, IsRegularGraph, GetRecvWeights, GetSendWeights.
- Analysis: is_*_stochastic, is_strongly_connected, spectral_gap,
  predicted_consensus_iterations, ...; files: save_json / load_json.
- Consensus simulated in-process at scale: run_consensus, random_start,
  period_second_eigenvalue_modulus, predicted_periodic_consensus_iterations.
- advise(size, local_size, intra, inter, bytes_per_step, compute_s): which method
  reaches consensus soonest on a cluster (also ``python -m flock.topology.advise``).
- Dynamic topologies: the Get*SendRecv*Ranks generators and the schedule objects
  behind them (DynamicOnePeer, ...); InferSourceFromDestinationRanks /
  InferDestinationFromSourceRanks (collective).

The job's topology itself (set_topology, load_topology, in_neighbor_ranks, ...)
belongs to the runtime: see flock.torch / flock.numpy. docs/topology.md has the
conventions, every generator's table, and what differs from Bluefog.
"""

from flock.topology._graph import Graph  # noqa: F401
from flock.topology._convert import as_graph  # noqa: F401
from flock.topology._generators import (  # noqa: F401
    CirculantGraph, DefaultMeshShape, ExponentialGraph, ExponentialTwoGraph, FullyConnectedGraph,
    GetRecvWeights, GetSendWeights, IsRegularGraph, IsTopologyEquivalent, MeshGrid2DGraph,
    RingGraph, StarGraph, SymmetricExponentialGraph, from_json_string, is_column_stochastic,
    is_doubly_stochastic, is_regular, is_row_stochastic, is_strongly_connected,
    is_topology_equivalent, load_json, predicted_consensus_iterations, save_json,
    second_largest_eigenvalue_modulus, spectral_gap, to_json_string)
from flock.topology._dynamic import (  # noqa: F401
    DynamicOnePeer, Exp2DynamicMachine, GetDynamicOnePeerSendRecvRanks,
    GetExp2DynamicSendRecvMachineRanks, GetInnerOuterExpo2DynamicSendRecvRanks,
    GetInnerOuterRingDynamicSendRecvRanks, InnerOuterExpo2Dynamic, InnerOuterRingDynamic,
    Schedule)
from flock.topology._consensus import (  # noqa: F401
    ConsensusRun, period_second_eigenvalue_modulus, predicted_periodic_consensus_iterations,
    random_start, run_consensus)
from flock.topology._infer import (  # noqa: F401
    InferDestinationFromSourceRanks, InferSourceFromDestinationRanks)


def __getattr__(name):
    # advise() is imported on first use, so that ``python -m flock.topology.advise``
    # does not find its module imported already by the package.
    if name == "advise":
        from flock.topology.advise import advise as function
        return function
    raise AttributeError(f"module 'flock.topology' has no attribute {name!r}")
