// Spectral quantities of W (see analysis.h): |lambda_2|, the spectral gap and
// the consensus-time estimate derived from it, by the method that fits the graph
// (spectral_solvers.h).
//
// Vocabulary: the moduli |lambda| of W's eigenvalues, sorted in decreasing
// order; for a stochastic W the first is 1 and the second, |lambda_2|, sets the
// rate at which repeated mixing forgets everything but the average.
#include <algorithm>
#include <cmath>
#include <vector>

#include "check.h"
#include "flock/topology/analysis.h"
#include "spectral_solvers.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

// Below this |lambda_2| is taken as exactly 0 and within it of 1 as exactly 1.
constexpr double kEigenEpsilon = 1e-12;

// A node not reached from node 0 along out-edges (forward) or in-edges; -1 when
// every node is.
int first_unreached(const Graph& g, bool forward) {
  std::vector<char> seen(static_cast<std::size_t>(g.size()), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    for (const auto& entry : forward ? g.out_edges(node) : g.in_edges(node)) {
      if (!seen[static_cast<std::size_t>(entry.first)]) {
        seen[static_cast<std::size_t>(entry.first)] = 1;
        stack.push_back(entry.first);
      }
    }
  }
  const auto unseen = std::find(seen.begin(), seen.end(), 0);
  return unseen == seen.end() ? -1 : static_cast<int>(unseen - seen.begin());
}

// The checks every method needs: a stochastic W (else its moduli say nothing
// about mixing) that is strongly connected (else no method can tell the repeated
// eigenvalue 1 from the rate, and consensus never reaches the average).
void check_spectral_input(const Graph& g, const char* what) {
  if (g.size() == 0) fail(what, ": the graph is empty");
  if (!is_column_stochastic(g) && !is_row_stochastic(g)) {
    fail(what,
         ": W is neither column- nor row-stochastic, so its eigenvalues do not describe "
         "mixing; give mixing weights (every node's received weights sum to 1), e.g. "
         "the graph's uniform weights");
  }
  if (const int node = first_unreached(g, true); node >= 0) {
    fail(what, ": the graph is not strongly connected (node ", node,
         " cannot be reached from node 0), so |lambda_2| = 1 and consensus never reaches the "
         "average");
  }
  if (const int node = first_unreached(g, false); node >= 0) {
    fail(what, ": the graph is not strongly connected (node 0 cannot be reached from node ", node,
         "), so |lambda_2| = 1 and consensus never reaches the average");
  }
}

double sparse_lambda2(const Graph& g, const char* what) {
  const Eigen::SparseMatrix<double> w = g.to_sparse();
  // The rows of the mixing operator must sum to 1: W^T when W's columns do.
  std::vector<detail::RowMajorSparse> steps;
  if (is_column_stochastic(g)) {
    steps.emplace_back(w.transpose());
  } else {
    steps.emplace_back(w);
  }
  return detail::sparse_lambda2(steps, what);
}

double lambda2_of_checked(const Graph& g, SpectralMethod method, const char* what) {
  if (g.size() == 1) return 0.0;
  if (method == SpectralMethod::kAuto || method == SpectralMethod::kCirculant) {
    if (const auto circulant = detail::circulant_lambda2(g)) return *circulant;
    if (method == SpectralMethod::kCirculant) fail(what, ": W is not circulant");
  }
  const bool dense = method == SpectralMethod::kDense || g.size() < 3 ||
                     (method == SpectralMethod::kAuto && g.size() <= kDenseSpectralNodes);
  return dense ? detail::dense_lambda2(g.to_dense(), what) : sparse_lambda2(g, what);
}

}  // namespace

double second_largest_eigenvalue_modulus(const Graph& g, SpectralMethod method) {
  check_spectral_input(g, "second_largest_eigenvalue_modulus");
  return lambda2_of_checked(g, method, "second_largest_eigenvalue_modulus");
}

double spectral_gap(const Graph& g, SpectralMethod method) {
  check_spectral_input(g, "spectral_gap");
  return 1.0 - lambda2_of_checked(g, method, "spectral_gap");
}

std::optional<std::int64_t> predicted_consensus_iterations(const Graph& g, double eps,
                                                           SpectralMethod method) {
  if (!(eps > 0.0 && eps < 1.0)) {
    fail("predicted_consensus_iterations(g, ", eps, "): eps must lie in (0, 1)");
  }
  if (g.size() == 0) fail("predicted_consensus_iterations: the graph is empty");
  if (g.size() == 1) return 0;
  if (!is_strongly_connected(g)) return std::nullopt;  // never: the answer, not an error
  check_spectral_input(g, "predicted_consensus_iterations");
  const double lambda2 = lambda2_of_checked(g, method, "predicted_consensus_iterations");
  return consensus_iterations_at_rate(lambda2, eps);
}

std::optional<std::int64_t> consensus_iterations_at_rate(double lambda2, double eps) {
  if (lambda2 < kEigenEpsilon) return 1;
  if (lambda2 > 1.0 - kEigenEpsilon) return std::nullopt;
  const double steps = std::ceil(std::log(eps) / std::log(lambda2));
  return static_cast<std::int64_t>(std::max(1.0, steps));
}

}  // namespace topology
}  // namespace flock
