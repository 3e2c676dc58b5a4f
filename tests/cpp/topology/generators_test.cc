// Generators against SEMANTICS.md's definitions, n = 1..17: every edge, every
// weight and every neighbour list. Expected matrices are built here from the
// definitions (distance sets, grid coordinates), not by calling the library.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "test_util.h"

namespace flock {
namespace topology {
namespace {

using testing_util::expect_graph_is;
using testing_util::uniform_circulant;

constexpr int kMaxSize = 17;

// d == base^k for some k >= 0, decided through a rounded logarithm.
bool power_by_log(int d, int base) {
  const long k =
      std::lround(std::log(static_cast<double>(d)) / std::log(static_cast<double>(base)));
  return k >= 0 && std::lround(std::pow(base, k)) == d;
}

std::string label(const char* name, int n) {
  return std::string(name) + "(" + std::to_string(n) + ")";
}

TEST(Generators, ExponentialTwoGraph) {
  for (int n = 1; n <= kMaxSize; ++n) {
    std::vector<bool> keep(n, false);
    for (int d = 1; d < n; ++d) keep[d] = (d & (d - 1)) == 0;  // a single bit set
    expect_graph_is(ExponentialTwoGraph(n), uniform_circulant(n, keep), label("Exp2", n));
  }
}

TEST(Generators, ExponentialGraphEveryBase) {
  for (int base = 2; base <= 5; ++base) {
    for (int n = 1; n <= kMaxSize; ++n) {
      std::vector<bool> keep(n, false);
      for (int d = 1; d < n; ++d) keep[d] = power_by_log(d, base);
      expect_graph_is(ExponentialGraph(n, base), uniform_circulant(n, keep),
                      label("Exp", n) + " base " + std::to_string(base));
    }
  }
}

TEST(Generators, ExponentialGraphSizeFourRows) {
  // SEMANTICS.md: n = 4 -> every row is [1/3, 1/3, 1/3, 0] rotated.
  const Graph g = ExponentialGraph(4);
  for (int i = 0; i < 4; ++i) {
    for (int d = 0; d < 4; ++d) {
      EXPECT_NEAR(g.weight(i, (i + d) % 4), d < 3 ? 1.0 / 3 : 0.0, 1e-15);
    }
  }
}

TEST(Generators, ExponentialGraphLargePowersAreExact) {
  // 243 = 3^5, which a float logarithm misses; 242 and 244 are not powers.
  const Graph g = ExponentialGraph(300, 3);
  EXPECT_TRUE(g.has_edge(0, 243));
  EXPECT_FALSE(g.has_edge(0, 242));
  EXPECT_EQ(g.out_degree(0), 6);  // 1, 3, 9, 27, 81, 243
}

TEST(Generators, SymmetricExponentialGraph) {
  for (int base : {2, 3, 4}) {
    for (int n = 1; n <= kMaxSize; ++n) {
      std::vector<bool> keep(n, false);
      for (int d = 1; d < n; ++d) keep[d] = power_by_log(std::min(d, n - d), base);
      const Graph g = SymmetricExponentialGraph(n, base);
      expect_graph_is(g, uniform_circulant(n, keep),
                      label("SymExp", n) + " base " + std::to_string(base));
      EXPECT_TRUE(g.to_dense().isApprox(g.to_dense().transpose())) << n;
    }
  }
}

TEST(Generators, SymmetricExponentialGraphSizeTwelve) {
  // base 4, n = 12: distances 1, 4 and their mirrors 11, 8 -> 5 entries of 1/5.
  const Graph g = SymmetricExponentialGraph(12);
  EXPECT_EQ(g.out_neighbors(0), (std::vector<int>{1, 4, 8, 11}));
  EXPECT_NEAR(g.self_weight(0), 0.2, 1e-15);
}

// Metropolis-Hastings weights on a rows x cols grid, from coordinates.
Eigen::MatrixXd expected_mesh(int rows, int cols) {
  const int n = rows * cols;
  const auto adjacent = [cols](int a, int b) {
    return std::abs(a / cols - b / cols) + std::abs(a % cols - b % cols) == 1;
  };
  std::vector<int> deg(n, 1);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) deg[a] += adjacent(a, b) ? 1 : 0;
  }
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  for (int a = 0; a < n; ++a) {
    double rest = 1.0;
    for (int b = 0; b < n; ++b) {
      if (!adjacent(a, b)) continue;
      m(a, b) = 1.0 / std::max(deg[a], deg[b]);
      rest -= m(a, b);
    }
    m(a, a) = rest;
  }
  return m;
}

TEST(Generators, MeshGrid2DGraphDefaultShape) {
  for (int n = 1; n <= kMaxSize; ++n) {
    int rows = 1;
    for (int r = 1; r * r <= n; ++r) {
      if (n % r == 0) rows = r;
    }
    EXPECT_EQ(DefaultMeshShape(n), std::make_pair(rows, n / rows)) << n;
    expect_graph_is(MeshGrid2DGraph(n), expected_mesh(rows, n / rows), label("Mesh", n));
  }
}

TEST(Generators, MeshGrid2DGraphGivenShapes) {
  for (int n = 1; n <= kMaxSize; ++n) {
    for (int rows = 1; rows <= n; ++rows) {
      if (n % rows != 0) continue;
      expect_graph_is(MeshGrid2DGraph(n, {rows, n / rows}), expected_mesh(rows, n / rows),
                      label("Mesh", n) + " rows " + std::to_string(rows));
    }
  }
}

TEST(Generators, MeshGrid2DGraphThreeByThreeWeights) {
  // Corner deg 3, edge deg 4, centre deg 5 (self counted).
  const Graph g = MeshGrid2DGraph(9);
  EXPECT_NEAR(g.weight(0, 1), 1.0 / 4, 1e-15);  // corner - edge
  EXPECT_NEAR(g.weight(1, 4), 1.0 / 5, 1e-15);  // edge - centre
  EXPECT_NEAR(g.self_weight(0), 1.0 / 2, 1e-15);
  EXPECT_NEAR(g.self_weight(1), 1.0 - 2.0 / 4 - 1.0 / 5, 1e-15);
  EXPECT_NEAR(g.self_weight(4), 1.0 / 5, 1e-15);
}

TEST(Generators, StarGraphEveryCenter) {
  for (int n = 1; n <= kMaxSize; ++n) {
    for (int c = 0; c < n; ++c) {
      Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
      for (int i = 0; i < n; ++i) {
        m(i, i) = i == c ? 1.0 / n : 1.0 - 1.0 / n;
        if (i != c) m(i, c) = m(c, i) = 1.0 / n;
      }
      expect_graph_is(StarGraph(n, c), m, label("Star", n) + " center " + std::to_string(c));
    }
  }
}

TEST(Generators, RingGraphEveryStyle) {
  for (int n = 1; n <= kMaxSize; ++n) {
    for (int style = 0; style <= 2; ++style) {
      Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
      for (int i = 0; i < n; ++i) {
        const int left = (i + n - 1) % n;
        const int right = (i + 1) % n;
        if (n == 1) {
          m(i, i) = 1.0;
        } else if (n == 2) {
          m(i, 0) = m(i, 1) = 0.5;
        } else if (style == 0) {
          m(i, i) = m(i, left) = m(i, right) = 1.0 / 3;
        } else {
          m(i, i) = 0.5;
          m(i, style == 1 ? left : right) = 0.5;
        }
      }
      expect_graph_is(RingGraph(n, style), m, label("Ring", n) + " style " + std::to_string(style));
    }
  }
}

TEST(Generators, FullyConnectedGraph) {
  for (int n = 1; n <= kMaxSize; ++n) {
    expect_graph_is(FullyConnectedGraph(n), Eigen::MatrixXd::Constant(n, n, 1.0 / n),
                    label("Full", n));
  }
}

TEST(Generators, CirculantGraphUniformAndDeduplicated) {
  const Graph g = CirculantGraph(6, {2, 2, 3});
  EXPECT_EQ(g.out_neighbors(1), (std::vector<int>{3, 4}));
  EXPECT_NEAR(g.weight(1, 3), 1.0 / 3, 1e-15);
}

TEST(Generators, EveryGeneratorIsMarkedWeighted) {
  for (const Graph& g : {ExponentialTwoGraph(5), ExponentialGraph(5), SymmetricExponentialGraph(5),
                         MeshGrid2DGraph(6), StarGraph(5), RingGraph(5), FullyConnectedGraph(5)}) {
    EXPECT_TRUE(g.is_weighted());
  }
}

TEST(Generators, InvalidArgumentsThrow) {
  EXPECT_THROW(ExponentialTwoGraph(0), TopologyError);
  EXPECT_THROW(ExponentialGraph(-1), TopologyError);
  EXPECT_THROW(ExponentialGraph(8, 1), TopologyError);
  EXPECT_THROW(SymmetricExponentialGraph(8, 0), TopologyError);
  EXPECT_THROW(MeshGrid2DGraph(0), TopologyError);
  EXPECT_THROW(MeshGrid2DGraph(12, {5, 3}), TopologyError);
  EXPECT_THROW(MeshGrid2DGraph(12, {0, 12}), TopologyError);
  EXPECT_THROW(StarGraph(4, 4), TopologyError);
  EXPECT_THROW(StarGraph(4, -1), TopologyError);
  EXPECT_THROW(RingGraph(4, 3), TopologyError);
  EXPECT_THROW(FullyConnectedGraph(0), TopologyError);
  EXPECT_THROW(CirculantGraph(4, {4}), TopologyError);
  EXPECT_THROW(CirculantGraph(4, {0}), TopologyError);
}

TEST(Generators, ErrorMessagesNameTheProblem) {
  try {
    RingGraph(5, 7);
    FAIL() << "no throw";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("RingGraph(5, 7): connect_style"), std::string::npos)
        << e.what();
  }
  try {
    MeshGrid2DGraph(12, {5, 3});
    FAIL() << "no throw";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("does not hold 12 nodes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace topology
}  // namespace flock
