// Analysis of a topology: stochasticity, connectivity, regularity, spectral
// gap, equivalence, and the per-rank weight views the runtime needs.
//
// Vocabulary (W[i][j] = weight of i -> j, see graph.h):
//   row-stochastic     every row of W sums to 1: each node sends out a total
//                      weight of 1 (mass is conserved, push-sum style).
//   column-stochastic  every column sums to 1: each node's new value is a
//                      convex combination of what it receives (an average).
//   doubly stochastic  both; repeated mixing then converges to the exact mean.
//   tol                absolute tolerance on sums and weight differences.
//   |lambda_2|         second largest modulus among the eigenvalues of W
//                      (counted with multiplicity, so a disconnected graph has
//                      |lambda_2| = 1). Defined as 0 when size() == 1.
//   spectral gap       1 - |lambda_2|.
//
// Structure (connectivity, regularity, equivalence) looks at edges, whatever
// their weight. Functions that need nodes throw TopologyError on an empty graph
// or an out-of-range rank; the yes/no queries never throw otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "flock/topology/graph.h"

namespace flock {
namespace topology {

inline constexpr double kDefaultTolerance = 1e-9;

bool is_row_stochastic(const Graph& g, double tol = kDefaultTolerance);
bool is_column_stochastic(const Graph& g, double tol = kDefaultTolerance);
bool is_doubly_stochastic(const Graph& g, double tol = kDefaultTolerance);

// Every node reaches every other along directed edges. size 1: true;
// size 0: false.
bool is_strongly_connected(const Graph& g);

// Bluefog's IsRegularGraph: every node has the same degree, where
// degree = in-edges + out-edges with a self loop counted once in each
// (networkx's DiGraph.degree). size 0 and 1: true.
bool is_regular(const Graph& g);

// Bluefog's IsTopologyEquivalent: same size, same edge set (self loops
// included) and every weight within tol. The weighted flag is not compared.
bool is_topology_equivalent(const Graph& a, const Graph& b, double tol = kDefaultTolerance);

// Weights of one rank: its self weight W[r][r] (0 without a self loop) and its
// neighbours' weights, self excluded, keyed by neighbour rank.
struct RankWeights {
  double self_weight = 0.0;
  std::map<int, double> neighbor_weights;
};
// Bluefog's GetRecvWeights: (W[r][r], {j: W[j][r]}) over r's in-neighbours.
RankWeights get_recv_weights(const Graph& g, int rank);
// Bluefog's GetSendWeights: (W[r][r], {j: W[r][j]}) over r's out-neighbours.
RankWeights get_send_weights(const Graph& g, int rank);

// How |lambda_2| is found (spectral.cc):
//   kAuto       circulant when W is (exact, O(n d)), else dense up to
//               kDenseSpectralNodes nodes, else sparse.
//   kDense      Eigen's dense eigenvalue solver on the n x n W: O(n^3) time and
//               O(n^2) memory; the reference.
//   kCirculant  the discrete Fourier transform of W's first row (error when W is
//               not circulant); exact to rounding, any n.
//   kSparse     Spectra's solvers on the sparse W with its eigenvalue 1
//               deflated: Lanczos on the symmetrized W when W is reversible
//               (symmetric, or uniform weights on an undirected graph), with
//               shift-invert through a sparse Cholesky factorization when
//               |lambda_2| crowds near 1; Arnoldi otherwise. O(nnz) per product,
//               for large non-circulant graphs (below 33 nodes the dense solver
//               answers).
enum class SpectralMethod { kAuto, kDense, kCirculant, kSparse };
inline constexpr int kDenseSpectralNodes = 400;

// |lambda_2| of a stochastic W (row- or column-stochastic, within
// kDefaultTolerance). 0 for a single node. TopologyError for an empty graph, a W
// that is not stochastic (its eigenvalues then say nothing about mixing) and a
// graph that is not strongly connected (|lambda_2| = 1: it never mixes; the
// message names a node that cannot be reached).
double second_largest_eigenvalue_modulus(const Graph& g,
                                         SpectralMethod method = SpectralMethod::kAuto);

// 1 - |lambda_2|: 1 for size 1 and for FullyConnectedGraph. Errors as above.
double spectral_gap(const Graph& g, SpectralMethod method = SpectralMethod::kAuto);

// Predicted number of mixing steps x <- W^T x after which the distance to the
// average has shrunk by a factor eps (0 < eps < 1), from the asymptotic rate
// |lambda_2|^k:  k = ceil(log(eps) / log(|lambda_2|)).
// Special cases: size 1 -> 0; |lambda_2| ~ 0 (below 1e-12, e.g. fully
// connected) -> 1; not strongly connected, or |lambda_2| ~ 1 (within 1e-12) ->
// nullopt (never). TopologyError for a W that is not stochastic. An estimate:
// for non-symmetric W the true count can differ by a few steps (transient of
// the other eigenvalues).
std::optional<std::int64_t> predicted_consensus_iterations(
    const Graph& g, double eps, SpectralMethod method = SpectralMethod::kAuto);

// The same count from a known rate |lambda_2| (used for periodic schedules).
std::optional<std::int64_t> consensus_iterations_at_rate(double lambda2, double eps);

}  // namespace topology
}  // namespace flock
