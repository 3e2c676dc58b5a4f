// Spectral gap and consensus-time estimate against closed forms: the
// eigenvalues of a circulant W are its row's discrete Fourier transform, so
// RingGraph(n, 0) has lambda_k = 1/3 + 2/3 cos(2 pi k / n).
#include <cmath>
#include <complex>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/analysis.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"

namespace flock {
namespace topology {
namespace {

const double kPi = std::acos(-1.0);

// Second largest |lambda| of the circulant matrix with first row `row`.
double circulant_lambda2(const std::vector<double>& row) {
  const int n = static_cast<int>(row.size());
  std::vector<double> moduli;
  for (int k = 0; k < n; ++k) {
    std::complex<double> sum = 0.0;
    for (int d = 0; d < n; ++d) sum += row[d] * std::polar(1.0, 2 * kPi * k * d / n);
    moduli.push_back(std::abs(sum));
  }
  std::sort(moduli.rbegin(), moduli.rend());
  return n == 1 ? 0.0 : moduli[1];
}

TEST(Spectral, RingClosedForm) {
  for (int n = 3; n <= 17; ++n) {
    double lambda2 = 0.0;
    for (int k = 1; k < n; ++k) {
      lambda2 = std::max(lambda2, std::abs(1.0 / 3 + 2.0 / 3 * std::cos(2 * kPi * k / n)));
    }
    EXPECT_NEAR(second_largest_eigenvalue_modulus(RingGraph(n, 0)), lambda2, 1e-10) << n;
    EXPECT_NEAR(spectral_gap(RingGraph(n, 0)), 1.0 - lambda2, 1e-10) << n;
  }
}

TEST(Spectral, CirculantGeneratorsMatchFourier) {
  for (int n = 1; n <= 17; ++n) {
    for (const Graph& g : {ExponentialTwoGraph(n), ExponentialGraph(n, 3),
                           SymmetricExponentialGraph(n), RingGraph(n, 2)}) {
      std::vector<double> row(n);
      for (int d = 0; d < n; ++d) row[d] = g.weight(0, d);
      EXPECT_NEAR(second_largest_eigenvalue_modulus(g), circulant_lambda2(row), 1e-9) << n;
    }
  }
}

TEST(Spectral, FullyConnectedAndSingleNodeHaveGapOne) {
  for (int n = 1; n <= 17; ++n) {
    EXPECT_NEAR(spectral_gap(FullyConnectedGraph(n)), 1.0, 1e-10) << n;
  }
  EXPECT_EQ(spectral_gap(RingGraph(1)), 1.0);
  EXPECT_NEAR(spectral_gap(StarGraph(2)), 1.0, 1e-12);  // all weights 1/2
}

TEST(Spectral, DisconnectedIsAnErrorAndNeverConverges) {
  Graph g(4);
  for (int i = 0; i < 4; ++i) g.add_edge(i, i, 1.0);
  EXPECT_THROW(spectral_gap(g), TopologyError);
  EXPECT_EQ(predicted_consensus_iterations(g, 1e-3), std::nullopt);
}

TEST(Spectral, ExponentialTwoOfPowerOfTwoMixesFasterThanRing) {
  EXPECT_GT(spectral_gap(ExponentialTwoGraph(16)), spectral_gap(RingGraph(16)));
}

TEST(ConsensusIterations, ClosedForms) {
  // Ring of 4: |lambda_2| = 1/3, log(1e-3) / log(1/3) = 6.29 -> 7.
  EXPECT_EQ(predicted_consensus_iterations(RingGraph(4), 1e-3), 7);
  EXPECT_EQ(predicted_consensus_iterations(FullyConnectedGraph(6), 1e-6), 1);
  EXPECT_EQ(predicted_consensus_iterations(RingGraph(1), 1e-6), 0);
  EXPECT_THROW(predicted_consensus_iterations(RingGraph(4), 0.0), TopologyError);
  EXPECT_THROW(predicted_consensus_iterations(RingGraph(4), 1.0), TopologyError);
  EXPECT_THROW(predicted_consensus_iterations(Graph(), 0.5), TopologyError);
  EXPECT_THROW(spectral_gap(Graph()), TopologyError);
}

TEST(ConsensusIterations, BoundHoldsForSymmetricMixing) {
  // For symmetric W, ||x_k - mean|| <= |lambda_2|^k ||x_0 - mean||, so after the
  // predicted count the error is within eps of the start.
  for (const Graph& g : {RingGraph(12), MeshGrid2DGraph(12), SymmetricExponentialGraph(16)}) {
    const double eps = 1e-4;
    const auto steps = predicted_consensus_iterations(g, eps);
    ASSERT_TRUE(steps.has_value());
    Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(g.size(), 0.0, 1.0);
    x(3) = 7.0;
    const double mean = x.mean();
    const double start = (x.array() - mean).matrix().norm();
    const Eigen::MatrixXd w = g.to_dense();
    for (std::int64_t k = 0; k < *steps; ++k) x = w.transpose() * x;
    EXPECT_NEAR(x.mean(), mean, 1e-12);
    EXPECT_LE((x.array() - mean).matrix().norm(), eps * start * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace topology
}  // namespace flock
