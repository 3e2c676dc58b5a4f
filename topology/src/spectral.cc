// Spectral quantities of W (see analysis.h): |lambda_2|, the spectral gap and
// the consensus-time estimate derived from it.
//
// Vocabulary: the moduli |lambda| of W's eigenvalues, sorted in decreasing
// order; for a stochastic W the first is 1 and the second, |lambda_2|, sets the
// rate at which repeated mixing forgets everything but the average.
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <Eigen/Eigenvalues>

#include "check.h"
#include "flock/topology/analysis.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

// Below this |lambda_2| is taken as exactly 0 and within it of 1 as exactly 1.
constexpr double kEigenEpsilon = 1e-12;

}  // namespace

double second_largest_eigenvalue_modulus(const Graph& g) {
  if (g.size() == 0) fail("second_largest_eigenvalue_modulus: the graph is empty");
  if (g.size() == 1) return 0.0;
  Eigen::EigenSolver<Eigen::MatrixXd> solver(g.to_dense(), /*computeEigenvectors=*/false);
  if (solver.info() != Eigen::Success) {
    fail("second_largest_eigenvalue_modulus: the eigenvalue solver did not converge");
  }
  std::vector<double> moduli;
  moduli.reserve(static_cast<std::size_t>(g.size()));
  for (Eigen::Index k = 0; k < solver.eigenvalues().size(); ++k) {
    moduli.push_back(std::abs(solver.eigenvalues()[k]));
  }
  std::sort(moduli.begin(), moduli.end(), std::greater<double>());
  return moduli[1];
}

double spectral_gap(const Graph& g) {
  if (g.size() == 0) fail("spectral_gap: the graph is empty");
  return 1.0 - second_largest_eigenvalue_modulus(g);
}

std::optional<std::int64_t> predicted_consensus_iterations(const Graph& g, double eps) {
  if (!(eps > 0.0 && eps < 1.0)) {
    fail("predicted_consensus_iterations(g, ", eps, "): eps must lie in (0, 1)");
  }
  if (g.size() == 0) fail("predicted_consensus_iterations: the graph is empty");
  if (g.size() == 1) return 0;
  const double lambda2 = second_largest_eigenvalue_modulus(g);
  if (lambda2 < kEigenEpsilon) return 1;
  if (lambda2 > 1.0 - kEigenEpsilon) return std::nullopt;
  const double steps = std::ceil(std::log(eps) / std::log(lambda2));
  return static_cast<std::int64_t>(std::max(1.0, steps));
}

}  // namespace topology
}  // namespace flock
