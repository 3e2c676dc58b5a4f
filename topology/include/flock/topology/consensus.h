// Average consensus simulated in-process: how many mixing steps a topology
// needs, measured, next to what its spectrum predicts. Used by the example
// examples/cpp/topology_experiment.cc and by the tests.
//
// Vocabulary:
//   step          every node j replaces its value by sum_i W[i][j] x_i, that is
//                 x <- W^T x, with W the graph's weights (static) or the
//                 schedule's mixing graph of that iteration (dynamic, uniform
//                 weights, see schedule.h).
//   error         relative distance to the average of the start:
//                 e_k = ||x_k - mean(x_0) 1|| / ||x_0 - mean(x_0) 1||.
//   measured      the first k with e_k <= eps.
//   predicted     static: predicted_consensus_iterations(g, eps) (analysis.h),
//                 ceil(log eps / log |lambda_2(W)|). Dynamic with period p:
//                 the same from the rate |lambda_2(P)|^(1/p) of the product
//                 P = W_{p-1}^T ... W_0^T of one period, rounded up to whole
//                 periods.
//
// Every generator of generators.h gives a normal W (circulant or symmetric),
// for which e_k <= |lambda_2|^k: measured <= predicted. A random start has a
// generic component on the slowest eigenvectors, so the measured count is
// close below the prediction; consensus_matches_prediction states how close.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <Eigen/Dense>

#include "flock/topology/graph.h"
#include "flock/topology/schedule.h"

namespace flock {
namespace topology {

struct ConsensusRun {
  std::int64_t iterations = 0;  // steps taken
  bool converged = false;       // e_k <= eps was reached within the step limit
  std::vector<double> errors;   // e_0 = 1, e_1, ..., e_iterations
};

// `size` values drawn uniformly from [-1, 1) by std::mt19937 seeded with
// `seed`: the same start on every platform.
Eigen::VectorXd random_start(int size, std::uint32_t seed);

// Steps from x0 until e_k <= eps (0 < eps < 1) or max_iterations steps. A start
// that is already the average (e_0 undefined) converges in 0 steps.
ConsensusRun run_consensus(const Graph& g, const Eigen::VectorXd& x0, double eps,
                           std::int64_t max_iterations);
// A schedule's steps use its uniform weights, from checked_recv_ranks: a bad
// receive list throws TopologyError naming the step and the node (here and below).
ConsensusRun run_consensus(const DynamicSchedule& schedule, const Eigen::VectorXd& x0, double eps,
                           std::int64_t max_iterations);

// |lambda_2| of the product of one period's steps, P = W_{p-1}^T ... W_0^T
// (period >= 1). 0 when one period averages exactly.
double period_second_eigenvalue_modulus(const DynamicSchedule& schedule, std::int64_t period);

// Steps predicted for a periodic schedule: p * ceil(log eps / log |lambda_2(P)|);
// p when |lambda_2(P)| ~ 0; nullopt when |lambda_2(P)| ~ 1 (never).
std::optional<std::int64_t> predicted_periodic_consensus_iterations(const DynamicSchedule& schedule,
                                                                    std::int64_t period,
                                                                    double eps);

// The agreement the tests require between the measured and the predicted step
// counts of a static generator on n nodes (eps as in the run):
//   (1 - ln(1 / s) / ln(1/eps)) * predicted - 1  <=  measured  <=  predicted + 1,
//   s = 0.03 / sqrt(n).
// The upper bound is the theorem for normal W (+1 for rounding). The lower one
// allows a start whose share of the slowest eigenvectors is only s: a random
// start puts about 1 / sqrt(n) of its deviation on each eigenvector, and one 30
// times below that is ahead by log(1/s) / log(1/|lambda_2|) steps, a fraction
// ln(1/s) / ln(1/eps) of the prediction (1/3 for n = 9, eps = 1e-6; 2/3 at 10^5).
bool consensus_matches_prediction(std::int64_t measured, std::int64_t predicted, double eps, int n);

}  // namespace topology
}  // namespace flock
