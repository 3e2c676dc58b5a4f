// Average consensus simulated in-process (see consensus.h): x <- W^T x with a
// sparse W^T, the relative error to the start's mean after every step, and the
// per-period spectral prediction of dynamic schedules.
#include "flock/topology/consensus.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include <Eigen/SparseCore>

#include "check.h"
#include "flock/topology/analysis.h"
#include "spectral_solvers.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

void check_run(const char* what, int size, const Eigen::VectorXd& x0, double eps,
               std::int64_t max_iterations) {
  if (x0.size() != size) fail(what, ": the start has ", x0.size(), " values for ", size, " nodes");
  if (!(eps > 0.0 && eps < 1.0)) fail(what, ": eps must lie in (0, 1), got ", eps);
  if (max_iterations < 0) fail(what, ": max_iterations must be >= 0");
}

// Runs `step` (x -> next x at iteration k, written into its second argument)
// until the error reaches eps.
ConsensusRun run(
    const Eigen::VectorXd& x0, double eps, std::int64_t max_iterations,
    const std::function<void(std::int64_t, const Eigen::VectorXd&, Eigen::VectorXd&)>& step) {
  ConsensusRun result;
  const double mean = x0.mean();
  const double start = (x0.array() - mean).matrix().norm();
  result.errors.push_back(1.0);
  if (start == 0.0) {
    result.converged = true;
    return result;
  }
  Eigen::VectorXd x = x0, next(x0.size());
  while (result.iterations < max_iterations) {
    step(result.iterations, x, next);
    x.swap(next);
    ++result.iterations;
    result.errors.push_back((x.array() - mean).matrix().norm() / start);
    if (result.errors.back() <= eps) {
      result.converged = true;
      break;
    }
  }
  return result;
}

// Below this many nonzeros a step is too short to pay for starting threads.
constexpr Eigen::Index kThreadedNonzeros = Eigen::Index{1} << 20;

// y <- M x, M's rows split over the cores when M is large.
void mix(const detail::RowMajorSparse& m, const Eigen::VectorXd& x, Eigen::VectorXd& y) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (m.nonZeros() < kThreadedNonzeros || cores == 1) {
    y.noalias() = m * x;
    return;
  }
  std::vector<std::thread> workers;
  const Eigen::Index rows = m.rows();
  for (unsigned t = 0; t < cores; ++t) {
    const Eigen::Index begin = rows * t / cores, end = rows * (t + 1) / cores;
    workers.emplace_back([&m, &x, &y, begin, end] {
      y.segment(begin, end - begin).noalias() = m.middleRows(begin, end - begin) * x;
    });
  }
  for (std::thread& worker : workers) worker.join();
}

detail::RowMajorSparse transposed_weights(const Graph& g) {
  return detail::RowMajorSparse(g.to_sparse().transpose());
}

// W^T of step k of a schedule, row r its uniform_column(k, r) (no Graph: at
// 10^6 nodes a mixing graph's rows took a second to allocate, the run's steps
// less than a tenth of that).
detail::RowMajorSparse transposed_step(const DynamicSchedule& schedule, std::int64_t k) {
  const int n = schedule.size();
  detail::RowMajorSparse wt(n, n);
  wt.reserve(static_cast<Eigen::Index>(n) * 2);
  for (int r = 0; r < n; ++r) {
    wt.startVec(r);
    for (const auto& [source, weight] : schedule.uniform_column(k, r)) {
      wt.insertBack(r, source) = weight;
    }
  }
  wt.finalize();
  return wt;
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
  const detail::RowMajorSparse wt = transposed_weights(g);
  return run(x0, eps, max_iterations,
             [&wt](std::int64_t, const Eigen::VectorXd& x, Eigen::VectorXd& y) { mix(wt, x, y); });
}

ConsensusRun run_consensus(const DynamicSchedule& schedule, const Eigen::VectorXd& x0, double eps,
                           std::int64_t max_iterations) {
  check_run("run_consensus", schedule.size(), x0, eps, max_iterations);
  return run(x0, eps, max_iterations,
             [&schedule](std::int64_t k, const Eigen::VectorXd& x, Eigen::VectorXd& y) {
               mix(transposed_step(schedule, k), x, y);
             });
}

double period_second_eigenvalue_modulus(const DynamicSchedule& schedule, std::int64_t period) {
  constexpr const char* kWhat = "period_second_eigenvalue_modulus";
  if (period < 1) fail(kWhat, ": period must be >= 1, got ", period);
  const int n = schedule.size();
  if (n == 1) return 0.0;
  // One sparse step a mixing graph (as W^T, whose rows sum to 1 by the uniform
  // rule): the product is never formed (it fills in), nor are graphs built (a
  // period of them took 8 GB at 10^6 nodes).
  std::vector<detail::RowMajorSparse> steps;
  for (std::int64_t k = 0; k < period; ++k) steps.push_back(transposed_step(schedule, k));
  if (const auto circulant = detail::circulant_product_lambda2(steps)) return *circulant;
  if (n < 3 || n <= kDenseSpectralNodes) {
    Eigen::MatrixXd product = Eigen::MatrixXd::Identity(n, n);
    for (const detail::RowMajorSparse& step : steps) product = step * product;
    return detail::dense_lambda2(product, kWhat);
  }
  return detail::sparse_lambda2(steps, kWhat);
}

std::optional<std::int64_t> predicted_periodic_consensus_iterations(const DynamicSchedule& schedule,
                                                                    std::int64_t period,
                                                                    double eps) {
  if (!(eps > 0.0 && eps < 1.0)) {
    fail("predicted_periodic_consensus_iterations: eps must lie in (0, 1), got ", eps);
  }
  if (schedule.size() == 1) return 0;
  const auto periods =
      consensus_iterations_at_rate(period_second_eigenvalue_modulus(schedule, period), eps);
  if (!periods) return std::nullopt;
  return period * *periods;
}

bool consensus_matches_prediction(std::int64_t measured, std::int64_t predicted, double eps,
                                  int n) {
  if (!(eps > 0.0 && eps < 1.0)) fail("consensus_matches_prediction: eps must lie in (0, 1)");
  if (n < 1) fail("consensus_matches_prediction: n must be >= 1, got ", n);
  const double least_share = 0.03 / std::sqrt(static_cast<double>(n));
  const double head_start = std::log(1.0 / least_share) / std::log(1.0 / eps);
  const double lowest = (1.0 - head_start) * static_cast<double>(predicted) - 1.0;
  return measured <= predicted + 1 && static_cast<double>(measured) >= lowest;
}

}  // namespace topology
}  // namespace flock
