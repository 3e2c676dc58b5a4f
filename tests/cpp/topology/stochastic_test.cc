// Stochasticity: every generator, for n = 1..17, is row- and column-stochastic
// (doubly stochastic); hand-made counterexamples are told apart.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/analysis.h"
#include "flock/topology/generators.h"

namespace flock {
namespace topology {
namespace {

struct NamedGenerator {
  std::string name;
  std::function<Graph(int)> make;
};

std::vector<NamedGenerator> all_generators() {
  return {
      {"ExponentialTwo", [](int n) { return ExponentialTwoGraph(n); }},
      {"Exponential2", [](int n) { return ExponentialGraph(n, 2); }},
      {"Exponential3", [](int n) { return ExponentialGraph(n, 3); }},
      {"SymmetricExponential4", [](int n) { return SymmetricExponentialGraph(n, 4); }},
      {"SymmetricExponential2", [](int n) { return SymmetricExponentialGraph(n, 2); }},
      {"MeshGrid2D", [](int n) { return MeshGrid2DGraph(n); }},
      {"MeshGrid2DLine",
       [](int n) {
         return MeshGrid2DGraph(n, {n, 1});
       }},
      {"Star0", [](int n) { return StarGraph(n, 0); }},
      {"StarLast", [](int n) { return StarGraph(n, n - 1); }},
      {"Ring0", [](int n) { return RingGraph(n, 0); }},
      {"Ring1", [](int n) { return RingGraph(n, 1); }},
      {"Ring2", [](int n) { return RingGraph(n, 2); }},
      {"FullyConnected", [](int n) { return FullyConnectedGraph(n); }},
  };
}

TEST(Stochastic, EveryGeneratorIsDoublyStochastic) {
  for (const auto& gen : all_generators()) {
    for (int n = 1; n <= 17; ++n) {
      const Graph g = gen.make(n);
      EXPECT_TRUE(is_row_stochastic(g)) << gen.name << " " << n;
      EXPECT_TRUE(is_column_stochastic(g)) << gen.name << " " << n;
      EXPECT_TRUE(is_doubly_stochastic(g)) << gen.name << " " << n;
    }
  }
}

TEST(Stochastic, EveryGeneratorIsStronglyConnected) {
  for (const auto& gen : all_generators()) {
    for (int n = 1; n <= 17; ++n) {
      EXPECT_TRUE(is_strongly_connected(gen.make(n))) << gen.name << " " << n;
    }
  }
}

TEST(Stochastic, RowButNotColumn) {
  // Both nodes send everything to node 0: rows sum to 1, columns to 2 and 0.
  Graph g(2);
  g.add_edge(0, 0, 1.0);
  g.add_edge(1, 0, 1.0);
  EXPECT_TRUE(is_row_stochastic(g));
  EXPECT_FALSE(is_column_stochastic(g));
  EXPECT_FALSE(is_doubly_stochastic(g));
}

TEST(Stochastic, ColumnButNotRow) {
  // Node 1 averages 0 and itself; node 0 keeps its value.
  Graph g(2);
  g.add_edge(0, 0, 1.0);
  g.add_edge(0, 1, 0.5);
  g.add_edge(1, 1, 0.5);
  EXPECT_FALSE(is_row_stochastic(g));
  EXPECT_TRUE(is_column_stochastic(g));
}

TEST(Stochastic, Tolerance) {
  Graph g(1);
  g.add_edge(0, 0, 1.0 + 1e-7);
  EXPECT_FALSE(is_doubly_stochastic(g));
  EXPECT_TRUE(is_doubly_stochastic(g, 1e-6));
  EXPECT_FALSE(is_row_stochastic(Graph(1)));  // a node without weights sums to 0
  EXPECT_TRUE(is_row_stochastic(Graph()));    // vacuously
}

}  // namespace
}  // namespace topology
}  // namespace flock
