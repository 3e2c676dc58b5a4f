// Average consensus simulated in-process (see consensus.h): x <- W^T x with a
// sparse W^T, the relative error to the start's mean after every step, and the
// per-period spectral prediction of dynamic schedules.
#include "flock/topology/consensus.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include <Eigen/SparseCore>

#include "check.h"
#include "flock/topology/analysis.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

constexpr double kEigenEpsilon = 1e-12;  // as in spectral.cc

void check_run(const char* what, int size, const Eigen::VectorXd& x0, double eps,
               std::int64_t max_iterations) {
  if (x0.size() != size) fail(what, ": the start has ", x0.size(), " values for ", size, " nodes");
  if (!(eps > 0.0 && eps < 1.0)) fail(what, ": eps must lie in (0, 1), got ", eps);
  if (max_iterations < 0) fail(what, ": max_iterations must be >= 0");
}

// Runs `step` (x -> next x at iteration k) until the error reaches eps.
ConsensusRun run(const Eigen::VectorXd& x0, double eps, std::int64_t max_iterations,
                 const std::function<Eigen::VectorXd(std::int64_t, const Eigen::VectorXd&)>& step) {
  ConsensusRun result;
  const Eigen::VectorXd mean = Eigen::VectorXd::Constant(x0.size(), x0.mean());
  const double start = (x0 - mean).norm();
  result.errors.push_back(1.0);
  if (start == 0.0) {
    result.converged = true;
    return result;
  }
  Eigen::VectorXd x = x0;
  while (result.iterations < max_iterations) {
    x = step(result.iterations, x);
    ++result.iterations;
    result.errors.push_back((x - mean).norm() / start);
    if (result.errors.back() <= eps) {
      result.converged = true;
      break;
    }
  }
  return result;
}

Eigen::SparseMatrix<double> transposed_weights(const Graph& g) {
  return Eigen::SparseMatrix<double>(g.to_sparse().transpose());
}

}  // namespace

Eigen::VectorXd random_start(int size, std::uint32_t seed) {
  if (size < 1) fail("random_start(", size, ", ", seed, "): size must be >= 1");
  std::mt19937 engine(seed);
  // Drawn by hand rather than with uniform_real_distribution, whose output the
  // standard leaves to the implementation.
  Eigen::VectorXd x(size);
  for (int i = 0; i < size; ++i) x[i] = -1.0 + 2.0 * (static_cast<double>(engine()) / 4294967296.0);
  return x;
}

ConsensusRun run_consensus(const Graph& g, const Eigen::VectorXd& x0, double eps,
                           std::int64_t max_iterations) {
  check_run("run_consensus", g.size(), x0, eps, max_iterations);
  const Eigen::SparseMatrix<double> wt = transposed_weights(g);
  return run(x0, eps, max_iterations,
             [&wt](std::int64_t, const Eigen::VectorXd& x) -> Eigen::VectorXd { return wt * x; });
}

ConsensusRun run_consensus(const DynamicSchedule& schedule, const Eigen::VectorXd& x0, double eps,
                           std::int64_t max_iterations) {
  check_run("run_consensus", schedule.size(), x0, eps, max_iterations);
  return run(x0, eps, max_iterations,
             [&schedule](std::int64_t k, const Eigen::VectorXd& x) -> Eigen::VectorXd {
               return transposed_weights(schedule.mixing_graph(k)) * x;
             });
}

double period_second_eigenvalue_modulus(const DynamicSchedule& schedule, std::int64_t period) {
  if (period < 1) fail("period_second_eigenvalue_modulus: period must be >= 1, got ", period);
  const int n = schedule.size();
  Eigen::MatrixXd product = Eigen::MatrixXd::Identity(n, n);
  for (std::int64_t k = 0; k < period; ++k) {
    product = schedule.mixing_graph(k).to_dense().transpose() * product;
  }
  // Rounding can leave tiny negative entries; they are zeros.
  return second_largest_eigenvalue_modulus(Graph::from_dense(product.cwiseMax(0.0)));
}

std::optional<std::int64_t> predicted_periodic_consensus_iterations(const DynamicSchedule& schedule,
                                                                    std::int64_t period,
                                                                    double eps) {
  if (!(eps > 0.0 && eps < 1.0)) {
    fail("predicted_periodic_consensus_iterations: eps must lie in (0, 1), got ", eps);
  }
  if (schedule.size() == 1) return 0;
  const double lambda2 = period_second_eigenvalue_modulus(schedule, period);
  if (lambda2 < kEigenEpsilon) return period;
  if (lambda2 > 1.0 - kEigenEpsilon) return std::nullopt;
  const double periods = std::ceil(std::log(eps) / std::log(lambda2));
  return period * static_cast<std::int64_t>(std::max(1.0, periods));
}

bool consensus_matches_prediction(std::int64_t measured, std::int64_t predicted, double eps) {
  if (!(eps > 0.0 && eps < 1.0)) fail("consensus_matches_prediction: eps must lie in (0, 1)");
  const double head_start = std::log(100.0) / std::log(1.0 / eps);
  const double lowest = (1.0 - head_start) * static_cast<double>(predicted) - 1.0;
  return measured <= predicted + 1 && static_cast<double>(measured) >= lowest;
}

}  // namespace topology
}  // namespace flock
