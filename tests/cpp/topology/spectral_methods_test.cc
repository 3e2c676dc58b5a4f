// The three spectral methods against each other and against closed forms: the
// sparse (Spectra) and circulant answers must equal the dense solver's on every
// generator for n = 2..300, and bad input (not stochastic, not strongly
// connected, not circulant for kCirculant) is an error naming the problem.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Eigenvalues>

#include "flock/topology/analysis.h"
#include "flock/topology/consensus.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "flock/topology/one_peer.h"

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
  const Graph mesh = MeshGrid2DGraph(2000, {40, 50});  // not circulant: the sparse path
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

TEST(SpectralMethods, PeriodicScheduleSparseMatchesDense) {
  // The one-peer exponential schedule over 1000 nodes, one period (10 steps):
  // the sparse path (n > kDenseSpectralNodes) against the dense product of its
  // matrices computed here.
  const int n = 1000;
  const DynamicOnePeer schedule(ExponentialTwoGraph(n));
  const std::int64_t period = 10;  // 10 out-neighbours, one a step
  Eigen::MatrixXd product = Eigen::MatrixXd::Identity(n, n);
  for (std::int64_t k = 0; k < period; ++k)
    product = schedule.mixing_graph(k).to_dense().transpose() * product;
  Eigen::EigenSolver<Eigen::MatrixXd> solver(product, false);
  std::vector<double> moduli;
  for (Eigen::Index i = 0; i < solver.eigenvalues().size(); ++i)
    moduli.push_back(std::abs(solver.eigenvalues()[i]));
  std::sort(moduli.rbegin(), moduli.rend());
  EXPECT_NEAR(period_second_eigenvalue_modulus(schedule, period), moduli[1], 1e-8);
}

}  // namespace
}  // namespace topology
}  // namespace flock
