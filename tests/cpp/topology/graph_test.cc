// Graph: edges, weights, neighbour lists, validation and the dense/sparse
// conversions.
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/errors.h"
#include "flock/topology/graph.h"

namespace flock {
namespace topology {
namespace {

// Message of the TopologyError thrown by f, or "" when f does not throw.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const TopologyError& e) {
    return e.what();
  }
  return "";
}

TEST(Graph, EmptyAndIsolated) {
  EXPECT_EQ(Graph().size(), 0);
  const Graph g(3);
  EXPECT_EQ(g.size(), 3);
  EXPECT_FALSE(g.is_weighted());
  EXPECT_EQ(g.num_edges(), 0u);
  EXPECT_EQ(g.self_weight(1), 0.0);
  EXPECT_TRUE(g.in_neighbors(1).empty());
  EXPECT_THROW(Graph(-1), TopologyError);
}

TEST(Graph, AddReplaceRemove) {
  Graph g(4, /*weighted=*/true);
  g.add_edge(0, 2, 0.25);
  g.add_edge(0, 2, 0.5);  // replaces
  g.add_edge(3, 2);       // default weight 1
  g.set_self_weight(2, 0.125);
  EXPECT_TRUE(g.is_weighted());
  EXPECT_EQ(g.num_edges(), 3u);
  EXPECT_EQ(g.weight(0, 2), 0.5);
  EXPECT_EQ(g.weight(3, 2), 1.0);
  EXPECT_EQ(g.self_weight(2), 0.125);
  EXPECT_EQ(g.weight(2, 0), 0.0);
  EXPECT_TRUE(g.remove_edge(0, 2));
  EXPECT_FALSE(g.remove_edge(0, 2));
  EXPECT_FALSE(g.has_edge(0, 2));
  EXPECT_EQ(g.in_neighbors(2), (std::vector<int>{3}));
}

TEST(Graph, NeighboursSortedWithoutSelf) {
  Graph g(6);
  for (int j : {5, 1, 3, 0}) g.add_edge(j, 0);  // includes the self loop 0 -> 0
  for (int j : {4, 2, 0}) g.add_edge(0, j);
  EXPECT_EQ(g.in_neighbors(0), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(g.out_neighbors(0), (std::vector<int>{2, 4}));
  EXPECT_EQ(g.in_degree(0), 3);
  EXPECT_EQ(g.out_degree(0), 2);
  // Rows include the self loop, sorted by the other end.
  EXPECT_EQ(g.in_edges(0), (EdgeRow{{0, 1.0}, {1, 1.0}, {3, 1.0}, {5, 1.0}}));
  EXPECT_EQ(g.out_edges(0), (EdgeRow{{0, 1.0}, {2, 1.0}, {4, 1.0}}));
}

// Random adds (in any order, some replacing a weight) and removals against a
// std::map per node: the rows stay sorted and equal to the map, both ways.
TEST(Graph, RowsMatchAMapThroughRandomAddsAndRemovals) {
  const int n = 40;
  Graph g(n);
  std::vector<std::map<int, double>> out(n), in(n);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> node(0, n - 1);
  for (int step = 0; step < 5000; ++step) {
    const int from = node(rng), to = node(rng);
    if (rng() % 4 == 0) {
      EXPECT_EQ(g.remove_edge(from, to), out[from].erase(to) > 0);
      in[to].erase(from);
    } else {
      const double weight = static_cast<double>(step);
      g.add_edge(from, to, weight);
      out[from][to] = weight;
      in[to][from] = weight;
    }
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(g.out_edges(i), EdgeRow(out[i].begin(), out[i].end())) << "node " << i;
    EXPECT_EQ(g.in_edges(i), EdgeRow(in[i].begin(), in[i].end())) << "node " << i;
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(g.has_edge(i, j), out[i].count(j) > 0);
      EXPECT_EQ(g.weight(i, j), out[i].count(j) ? out[i].at(j) : 0.0);
    }
  }
}

TEST(Graph, ZeroWeightEdgeIsAnEdge) {
  Graph g(2);
  g.add_edge(0, 1, 0.0);
  EXPECT_TRUE(g.has_edge(0, 1));
  EXPECT_EQ(g.out_neighbors(0), (std::vector<int>{1}));
}

TEST(Graph, EdgesSortedByFromThenTo) {
  Graph g(3);
  g.add_edge(2, 0, 0.5);
  g.add_edge(0, 2, 0.25);
  g.add_edge(0, 1, 0.75);
  const auto edges = g.edges();
  ASSERT_EQ(edges.size(), 3u);
  EXPECT_EQ(edges[0].to, 1);
  EXPECT_EQ(edges[1].to, 2);
  EXPECT_EQ(edges[2].from, 2);
  EXPECT_EQ(edges[2].weight, 0.5);
}

TEST(Graph, ValidationNamesTheProblem) {
  Graph g(8);
  EXPECT_EQ(error_of([&] { g.add_edge(3, 9); }), "add_edge(3, 9): node 9 is out of range [0, 8)");
  EXPECT_EQ(error_of([&] { g.add_edge(-1, 2); }),
            "add_edge(-1, 2): node -1 is out of range [0, 8)");
  EXPECT_EQ(error_of([&] { g.add_edge(1, 2, -0.5); }), "add_edge(1, 2): negative weight -0.5");
  EXPECT_NE(error_of([&] { g.add_edge(1, 2, std::nan("")); }).find("not finite"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              g.add_edge(1, 2, std::numeric_limits<double>::infinity());
            }).find("not finite"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { g.in_neighbors(8); }), "in_neighbors(8): node 8 is out of range [0, 8)");
  EXPECT_THROW(g.weight(0, 8), TopologyError);
  EXPECT_THROW(g.remove_edge(8, 0), TopologyError);
  EXPECT_THROW(g.out_degree(-2), TopologyError);
  EXPECT_FALSE(g.has_edge(0, 8));  // a query, not an error
  EXPECT_EQ(g.num_edges(), 0u);    // nothing half-added
}

TEST(Graph, DenseRoundTrip) {
  Eigen::MatrixXd w(3, 3);
  w << 0.5, 0.5, 0.0,   //
      0.0, 0.25, 0.75,  //
      1.0, 0.0, 0.0;
  const Graph g = Graph::from_dense(w);
  EXPECT_TRUE(g.is_weighted());
  EXPECT_EQ(g.num_edges(), 5u);
  EXPECT_EQ(g.weight(1, 2), 0.75);
  EXPECT_EQ(g.in_neighbors(0), (std::vector<int>{2}));
  EXPECT_EQ(g.to_dense(), w);
  EXPECT_FALSE(Graph::from_dense(w, /*weighted=*/false).is_weighted());
}

TEST(Graph, SparseRoundTripKeepsExplicitZeros) {
  Graph g(4, true);
  g.add_edge(0, 1, 0.5);
  g.add_edge(1, 1, 0.0);
  g.add_edge(3, 0, 2.0);
  const Eigen::SparseMatrix<double> s = g.to_sparse();
  EXPECT_EQ(s.nonZeros(), 3);
  EXPECT_EQ(s.coeff(3, 0), 2.0);
  const Graph back = Graph::from_sparse(s);
  EXPECT_EQ(back.num_edges(), 3u);
  EXPECT_TRUE(back.has_edge(1, 1));
  EXPECT_EQ(back.weight(3, 0), 2.0);
  EXPECT_EQ(Eigen::MatrixXd(s), g.to_dense());
}

TEST(Graph, ConversionsRejectBadMatrices) {
  EXPECT_NE(error_of([] { Graph::from_dense(Eigen::MatrixXd::Zero(2, 3)); }).find("not square"),
            std::string::npos);
  Eigen::MatrixXd negative = Eigen::MatrixXd::Identity(2, 2);
  negative(0, 1) = -0.1;
  EXPECT_EQ(error_of([&] { Graph::from_dense(negative); }),
            "from_dense: entry (0, 1): negative weight -0.10000000000000001");
  Eigen::SparseMatrix<double> s(2, 2);
  s.insert(1, 0) = -1.0;
  EXPECT_THROW(Graph::from_sparse(s), TopologyError);
  EXPECT_THROW(Graph::from_sparse(Eigen::SparseMatrix<double>(2, 3)), TopologyError);
}

TEST(Graph, ErrorsAreInvalidArgument) {
  // The documented policy: TopologyError is a std::invalid_argument.
  Graph g(1);
  EXPECT_THROW(g.add_edge(0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace topology
}  // namespace flock
