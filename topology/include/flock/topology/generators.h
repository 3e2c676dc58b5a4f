// Topology generators: the static graphs of Bluefog's topology_util, same names,
// same edges, same weights, for every size >= 1.
//
// Vocabulary:
//   distance d    most generators are circulant: node i sends to (i + d) mod n
//                 for each distance d of one set D (1 <= d < n), plus a self
//                 loop; row i of W is row 0 rotated by i.
//   uniform       every edge leaving i, the self loop included, has weight
//                 1 / (|D| + 1); rows and columns then sum to 1.
//   power of b    b^k for an integer k >= 0, so 1 is a power of every base.
//
// | generator                     | D (or shape)                  | weights              |
// |-------------------------------|-------------------------------|----------------------|
// | ExponentialTwoGraph(n)        | powers of 2 below n           | uniform              |
// | ExponentialGraph(n, b)        | powers of b below n           | uniform              |
// | SymmetricExponentialGraph(n,b)| d: min(d, n-d) a power of b   | uniform, symmetric   |
// | MeshGrid2DGraph(n, shape)     | rows x cols grid, no wrap     | Metropolis-Hastings  |
// | StarGraph(n, center)          | leaves <-> center             | see StarGraph        |
// | RingGraph(n, style)           | 0: {1, n-1}; 1: {n-1}; 2: {1} | uniform (1/3 or 1/2) |
// | FullyConnectedGraph(n)        | all of 1..n-1                 | 1/n                  |
//
// Every generator returns a weighted Graph (is_weighted() == true) whose W is
// doubly stochastic. Invalid arguments throw TopologyError (errors.h).
#pragma once

#include <utility>
#include <vector>

#include "flock/topology/graph.h"

namespace flock {
namespace topology {

// Circulant graph on `size` nodes: i -> (i + d) mod size for each d in
// `distances` (each in [1, size); duplicates count once), plus self loops; all
// weights uniform. The building block of the generators below and the easiest
// way to write a topology of your own.
Graph CirculantGraph(int size, const std::vector<int>& distances);

// D = {1, 2, 4, ...} below size. Same graph as ExponentialGraph(size, 2).
Graph ExponentialTwoGraph(int size);

// D = {1, base, base^2, ...} below size; base >= 2.
// Example: size 4, base 2: every row is [1/3, 1/3, 1/3, 0] rotated.
Graph ExponentialGraph(int size, int base = 2);

// D = {d in [1, size) : min(d, size - d) is a power of base}; base >= 2. D is
// closed under d -> size - d, so the graph is undirected (W symmetric).
Graph SymmetricExponentialGraph(int size, int base = 4);

// The default shape of MeshGrid2DGraph: (rows, cols) with rows * cols == size,
// rows <= cols, rows the largest divisor of size not above sqrt(size).
// Prime sizes give (1, size), a line.
std::pair<int, int> DefaultMeshShape(int size);

// 2-D grid without wrap-around; node (r, c) is rank r * cols + c and is linked
// both ways to its left, right, upper and lower neighbours when they exist.
// shape = (rows, cols); {0, 0} means DefaultMeshShape(size); otherwise
// rows * cols must equal size. Metropolis-Hastings weights: with deg(i) the
// number of i's neighbours plus one (itself), W[i][j] = 1 / max(deg(i), deg(j))
// for a neighbour j, and W[i][i] = 1 - sum of i's other weights.
Graph MeshGrid2DGraph(int size, std::pair<int, int> shape = {0, 0});

// Every leaf is linked both ways to center_rank. Leaf: self 1 - 1/n, edge to
// the center 1/n. Center: self 1/n, edge to each leaf 1/n. size 1: [[1]].
Graph StarGraph(int size, int center_rank = 0);

// connect_style 0: i <-> i-1 and i+1, weights 1/3; 1: i sends to i-1 (self and
// edge 1/2); 2: i sends to i+1 (1/2). size 1: [[1]]; size 2: all four weights
// 1/2 whatever the style. connect_style outside 0..2 throws.
Graph RingGraph(int size, int connect_style = 0);

// Every node sends to every node; all weights 1/size.
Graph FullyConnectedGraph(int size);

}  // namespace topology
}  // namespace flock
