// Helpers shared by the flock_topology tests: an expected weight matrix is
// built in the test from the definitions (never by calling the code under
// test) and compared entry by entry with a Graph, neighbour lists included.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "flock/topology/graph.h"

namespace flock {
namespace topology {
namespace testing_util {

constexpr double kTight = 1e-12;

// Row 0 of a circulant W lists the distances with a nonzero weight (self = 0);
// every distance, self included, gets 1 / (count + 1).
inline Eigen::MatrixXd uniform_circulant(int n, const std::vector<bool>& keep_distance) {
  int kept = 0;
  for (int d = 1; d < n; ++d) kept += keep_distance[d] ? 1 : 0;
  const double w = 1.0 / (kept + 1);
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const int d = ((j - i) % n + n) % n;
      if (d == 0 || keep_distance[d]) m(i, j) = w;
    }
  }
  return m;
}

// Nonzero pattern of column `node` (in) or row `node` (out), self excluded.
inline std::vector<int> pattern(const Eigen::MatrixXd& m, int node, bool in) {
  std::vector<int> result;
  for (int other = 0; other < m.rows(); ++other) {
    const double value = in ? m(other, node) : m(node, other);
    if (other != node && value != 0.0) result.push_back(other);
  }
  return result;
}

// Every edge, weight and neighbour list of g matches `expected`.
inline void expect_graph_is(const Graph& g, const Eigen::MatrixXd& expected,
                            const std::string& label, double tol = kTight) {
  ASSERT_EQ(g.size(), expected.rows()) << label;
  for (int i = 0; i < g.size(); ++i) {
    for (int j = 0; j < g.size(); ++j) {
      EXPECT_EQ(g.has_edge(i, j), expected(i, j) != 0.0) << label << " edge " << i << "->" << j;
      EXPECT_NEAR(g.weight(i, j), expected(i, j), tol) << label << " W[" << i << "][" << j << "]";
    }
    EXPECT_EQ(g.in_neighbors(i), pattern(expected, i, true)) << label << " in of " << i;
    EXPECT_EQ(g.out_neighbors(i), pattern(expected, i, false)) << label << " out of " << i;
  }
}

}  // namespace testing_util
}  // namespace topology
}  // namespace flock
