"""The static topologies the examples offer on their command line, by name.

Each value builds the graph for a world size: TOPOLOGIES[name](bf.size()).
"""

from flock import topology as tu

TOPOLOGIES = {
    "exponential": tu.ExponentialGraph,
    "exponential_two": tu.ExponentialTwoGraph,
    "symmetric_exponential": tu.SymmetricExponentialGraph,
    "ring": tu.RingGraph,
    "mesh": tu.MeshGrid2DGraph,
    "star": tu.StarGraph,
    "full": tu.FullyConnectedGraph,
}

# Undirected ones: what methods needing a symmetric mixing matrix may use.
SYMMETRIC = ("ring", "symmetric_exponential", "mesh", "full")
