// The three spectral methods against each other and against closed forms: the
// sparse (Spectra) and circulant answers must equal the dense solver's on every
// generator for n = 2..300, and bad input (not stochastic, not strongly
// connected, not circulant for kCirculant) is an error naming the problem.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Eigenvalues>

#include "flock/topology/analysis.h"
#include "flock/topology/consensus.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "flock/topology/one_peer.h"
#include "flock/topology/schedule.h"

namespace flock {
namespace topology {
namespace {

struct Generator {
  std::string name;
  std::function<Graph(int)> make;
  bool circulant;
};

std::vector<Generator> generators() {
  return {{"ExponentialTwo", [](int n) { return ExponentialTwoGraph(n); }, true},
          {"Exponential3", [](int n) { return ExponentialGraph(n, 3); }, true},
          {"SymmetricExponential", [](int n) { return SymmetricExponentialGraph(n); }, true},
          {"Ring0", [](int n) { return RingGraph(n, 0); }, true},
          {"Ring1", [](int n) { return RingGraph(n, 1); }, true},
          {"Ring2", [](int n) { return RingGraph(n, 2); }, true},
          {"Circulant1-5",
           [](int n) {
             return CirculantGraph(n, n > 5 ? std::vector<int>{1, 5} : std::vector<int>{1});
           },
           true},
          {"MeshGrid2D", [](int n) { return MeshGrid2DGraph(n); }, false},
          {"Star", [](int n) { return StarGraph(n); }, false},
          {"FullyConnected", [](int n) { return FullyConnectedGraph(n); }, true}};
}

// Every n up to 64, then a spread up to 300 (the dense reference is O(n^3)).
std::vector<int> sizes() {
  std::vector<int> found;
  for (int n = 2; n <= 64; ++n) found.push_back(n);
  for (int n : {73, 96, 128, 127, 150, 199, 256, 257, 300}) found.push_back(n);
  return found;
}

TEST(SpectralMethods, SparseAndCirculantMatchDenseOnEveryGenerator) {
  for (const Generator& generator : generators()) {
    for (int n : sizes()) {
      const Graph g = generator.make(n);
      const double dense = second_largest_eigenvalue_modulus(g, SpectralMethod::kDense);
      EXPECT_NEAR(second_largest_eigenvalue_modulus(g, SpectralMethod::kSparse), dense, 1e-8)
          << generator.name << " n=" << n;
      EXPECT_NEAR(second_largest_eigenvalue_modulus(g), dense, 1e-8)
          << generator.name << " n=" << n;
      if (generator.circulant) {
        EXPECT_NEAR(second_largest_eigenvalue_modulus(g, SpectralMethod::kCirculant), dense, 1e-10)
            << generator.name << " n=" << n;
      }
    }
  }
}

TEST(SpectralMethods, RingOfManyNodesMatchesItsClosedForm) {
  // RingGraph(n, 0): lambda_k = 1/3 + 2/3 cos(2 pi k / n); |lambda_2| at k = 1,
  // within 2e-11 of 1 at n = 10^5: the case that stalls iterative solvers.
  const double pi = std::acos(-1.0);
  for (int n : {1000, 100000}) {
    const double expected = 1.0 / 3 + 2.0 / 3 * std::cos(2 * pi / n);
    EXPECT_NEAR(second_largest_eigenvalue_modulus(RingGraph(n, 0)), expected, 1e-12) << n;
    // |lambda_2| near 1 makes the count sensitive: 1 - |lambda_2| = 1.3e-9 at 10^5
    // nodes carries a rounding error of ~1e-16, so the count agrees to ~1e-6.
    const double steps = std::log(1e-6) / std::log(expected);
    EXPECT_NEAR(static_cast<double>(predicted_consensus_iterations(RingGraph(n, 0), 1e-6).value()),
                steps, 1e-6 * steps + 1);
  }
}

TEST(SpectralMethods, SparseSolverHandlesLargeNonCirculantGraphs) {
  const Graph mesh = MeshGrid2DGraph(1200, {30, 40});  // not circulant: the sparse path
  EXPECT_NEAR(second_largest_eigenvalue_modulus(mesh),
              second_largest_eigenvalue_modulus(mesh, SpectralMethod::kDense), 1e-8);
}

TEST(SpectralMethods, NonStochasticWeightsAreAnError) {
  Graph g(3);
  for (int i = 0; i < 3; ++i) {
    g.add_edge(i, i, 1.0);
    g.add_edge(i, (i + 1) % 3, 1.0);  // every row and column sums to 2
  }
  for (auto method : {SpectralMethod::kAuto, SpectralMethod::kDense, SpectralMethod::kSparse}) {
    try {
      spectral_gap(g, method);
      ADD_FAILURE() << "no error";
    } catch (const TopologyError& error) {
      EXPECT_NE(std::string(error.what()).find("neither column- nor row-stochastic"),
                std::string::npos)
          << error.what();
    }
  }
  EXPECT_THROW(predicted_consensus_iterations(g, 1e-3), TopologyError);
}

TEST(SpectralMethods, DisconnectedGraphIsAnErrorNamingANode) {
  Graph g(5);
  for (int i = 0; i < 5; ++i) g.add_edge(i, i, 1.0);
  try {
    second_largest_eigenvalue_modulus(g);
    ADD_FAILURE() << "no error";
  } catch (const TopologyError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("not strongly connected (node 1 cannot be reached from node 0)"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(predicted_consensus_iterations(g, 1e-3), std::nullopt);  // never: an answer
}

TEST(SpectralMethods, CirculantMethodRefusesOtherGraphs) {
  EXPECT_THROW(second_largest_eigenvalue_modulus(StarGraph(6), SpectralMethod::kCirculant),
               TopologyError);
}

// |lambda_2| of the product of one period's mixing matrices, from Eigen's dense
// solver: the reference for the schedule paths.
double dense_period_lambda2(const DynamicSchedule& schedule, std::int64_t period) {
  const int n = schedule.size();
  Eigen::MatrixXd product = Eigen::MatrixXd::Identity(n, n);
  for (std::int64_t k = 0; k < period; ++k)
    product = schedule.mixing_graph(k).to_dense().transpose() * product;
  Eigen::EigenSolver<Eigen::MatrixXd> solver(product, false);
  std::vector<double> moduli;
  for (Eigen::Index i = 0; i < solver.eigenvalues().size(); ++i)
    moduli.push_back(std::abs(solver.eigenvalues()[i]));
  std::sort(moduli.rbegin(), moduli.rend());
  return moduli[1];
}

TEST(SpectralMethods, PeriodOfCirculantStepsMatchesDense) {
  // The one-peer exponential schedule over 1000 nodes, one period (10 steps, one
  // out-neighbour a step): every step is circulant, so the product's eigenvalues
  // are products of the steps' Fourier coefficients.
  const DynamicOnePeer schedule(ExponentialTwoGraph(1000));
  EXPECT_NEAR(period_second_eigenvalue_modulus(schedule, 10), dense_period_lambda2(schedule, 10),
              1e-10);
}

TEST(SpectralMethods, PeriodSparseProductMatchesDense) {
  // One-peer on a mesh is not circulant: above kDenseSpectralNodes the product
  // of the steps' sparse matrices is applied, never formed.
  const DynamicOnePeer schedule(MeshGrid2DGraph(450, {18, 25}));
  EXPECT_NEAR(period_second_eigenvalue_modulus(schedule, 4), dense_period_lambda2(schedule, 4),
              1e-8);
}

// A path of n nodes with weight a on each edge (both ways), the rest on the self
// loop: W = I - a L, L the path's Laplacian, whose eigenvalues 2 - 2 cos(pi k / n)
// give W's in closed form. Symmetric, not circulant: the Lanczos path.
Graph weighted_path(int n, double a) {
  Graph g(n, true);
  for (int i = 0; i < n; ++i) {
    const int degree = (i > 0) + (i + 1 < n);
    g.add_edge(i, i, 1.0 - a * degree);
    if (i + 1 < n) {
      g.add_edge(i, i + 1, a);
      g.add_edge(i + 1, i, a);
    }
  }
  return g;
}

TEST(SpectralMethods, PathWithLambda2NearOneMatchesItsClosedForm) {
  // Metropolis-Hastings weights (a = 1/3) on 3000 nodes: 1 - lambda_2 = 3.7e-7
  // with the next eigenvalues as close: plain Lanczos stalls, shift-invert answers.
  const double pi = std::acos(-1.0);
  const int n = 3000;
  const double gap = (2.0 - 2.0 * std::cos(pi / n)) / 3.0;
  EXPECT_NEAR(spectral_gap(weighted_path(n, 1.0 / 3)) / gap, 1.0, 1e-6);
}

TEST(SpectralMethods, PathWithBothEndsNearOneNeedsTheSmallestEigenvalueToo) {
  // a = 1/2: the inner self weights are 0 and lambda_k = cos(pi k / n), so
  // |lambda_2| = cos(pi / n) comes from both ends; Gershgorin cannot rule the
  // bottom end out.
  const double pi = std::acos(-1.0);
  const int n = 2000;
  EXPECT_NEAR(1.0 - second_largest_eigenvalue_modulus(weighted_path(n, 0.5)),
              1.0 - std::cos(pi / n), 1e-6 * (1.0 - std::cos(pi / n)));
}

TEST(SpectralMethods, LargeMeshNeedsShiftInvertAndMatchesItsClosedForm) {
  // A 150 x 150 grid with weight 1/5 on each edge: W = I - (L_a (+) L_b) / 5, the
  // Kronecker sum of two path Laplacians; lambda_2 = 1 - (2 - 2 cos(pi / 150)) / 5,
  // twice.
  const double pi = std::acos(-1.0);
  const int side = 150;
  Graph g(side * side, true);
  for (int r = 0; r < side; ++r) {
    for (int c = 0; c < side; ++c) {
      const int node = r * side + c;
      double self = 1.0;
      for (const auto& [dr, dc] : {std::pair{1, 0}, {-1, 0}, {0, 1}, {0, -1}}) {
        if (r + dr < 0 || r + dr >= side || c + dc < 0 || c + dc >= side) continue;
        g.add_edge(node, (r + dr) * side + c + dc, 0.2);
        self -= 0.2;
      }
      g.add_edge(node, node, self);
    }
  }
  const double gap = (2.0 - 2.0 * std::cos(pi / side)) / 5.0;
  EXPECT_NEAR(spectral_gap(g) / gap, 1.0, 1e-6);
}

}  // namespace
}  // namespace topology
}  // namespace flock
