// Structural analysis: strong connectivity, Bluefog's regularity and
// equivalence, and the per-rank receive/send weight views.
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/analysis.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"

namespace flock {
namespace topology {
namespace {

Graph path(int n) {  // 0 -> 1 -> ... -> n-1 with self loops
  Graph g(n);
  for (int i = 0; i < n; ++i) {
    g.add_edge(i, i, 0.5);
    if (i + 1 < n) g.add_edge(i, i + 1, 0.5);
  }
  return g;
}

TEST(Connectivity, Cases) {
  EXPECT_FALSE(is_strongly_connected(Graph()));
  EXPECT_TRUE(is_strongly_connected(Graph(1)));  // one node, even without a self loop
  EXPECT_FALSE(is_strongly_connected(Graph(2)));
  EXPECT_FALSE(is_strongly_connected(path(4)));  // reaches forward only
  Graph cycle = path(4);
  cycle.add_edge(3, 0, 0.5);
  EXPECT_TRUE(is_strongly_connected(cycle));
  EXPECT_TRUE(is_strongly_connected(RingGraph(9, 2)));
  Graph two_islands(4);
  two_islands.add_edge(0, 1);
  two_islands.add_edge(1, 0);
  two_islands.add_edge(2, 3);
  two_islands.add_edge(3, 2);
  EXPECT_FALSE(is_strongly_connected(two_islands));
}

TEST(Regular, Generators) {
  for (int n = 1; n <= 17; ++n) {
    EXPECT_TRUE(is_regular(ExponentialTwoGraph(n))) << n;
    EXPECT_TRUE(is_regular(SymmetricExponentialGraph(n))) << n;
    EXPECT_TRUE(is_regular(RingGraph(n))) << n;
    EXPECT_TRUE(is_regular(FullyConnectedGraph(n))) << n;
    EXPECT_EQ(is_regular(StarGraph(n)), n <= 2) << n;
  }
  EXPECT_TRUE(is_regular(MeshGrid2DGraph(4)));   // 2 x 2: every node has 2 neighbours
  EXPECT_FALSE(is_regular(MeshGrid2DGraph(6)));  // 2 x 3: corners 2, middles 3
  EXPECT_TRUE(is_regular(Graph()));
}

TEST(Regular, CountsInPlusOutLikeNetworkx) {
  // 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 0: total degrees 3, 2, 3: not regular.
  Graph g(3);
  g.add_edge(0, 1);
  g.add_edge(0, 2);
  g.add_edge(1, 2);
  g.add_edge(2, 0);
  EXPECT_FALSE(is_regular(g));
  g.add_edge(1, 0);  // now 4, 3, 3
  g.add_edge(1, 1);  // a self loop counts twice: 4, 5, 3 -> still not
  EXPECT_FALSE(is_regular(g));
  // In and out degrees may differ per node as long as their sum agrees.
  Graph h(2);
  h.add_edge(0, 1);
  h.add_edge(1, 0);
  h.add_edge(0, 0);
  h.add_edge(1, 1);
  EXPECT_TRUE(is_regular(h));
}

TEST(Equivalence, Cases) {
  EXPECT_TRUE(is_topology_equivalent(ExponentialGraph(8), ExponentialTwoGraph(8)));
  // Both have two distances (1, 4 versus 1, 6): same edge count, other edges.
  EXPECT_FALSE(is_topology_equivalent(ExponentialGraph(7, 4), SymmetricExponentialGraph(7, 4)));
  EXPECT_FALSE(is_topology_equivalent(RingGraph(5), RingGraph(6)));
  EXPECT_FALSE(is_topology_equivalent(RingGraph(5, 1), RingGraph(5, 2)));  // same counts
  EXPECT_TRUE(is_topology_equivalent(RingGraph(2, 0), RingGraph(2, 1)));
  Graph a = RingGraph(4);
  Graph b = RingGraph(4);
  b.add_edge(0, 1, 1.0 / 3 + 1e-12);
  EXPECT_TRUE(is_topology_equivalent(a, b));
  EXPECT_FALSE(is_topology_equivalent(a, b, 0.0));
  b.add_edge(0, 1, 0.5);
  EXPECT_FALSE(is_topology_equivalent(a, b));
  b.set_weighted(false);  // the flag is not compared
  b.add_edge(0, 1, 1.0 / 3);
  EXPECT_TRUE(is_topology_equivalent(a, b));
  Graph c = RingGraph(4);
  c.add_edge(0, 2, 0.0);  // an extra zero-weight edge is still an edge
  EXPECT_FALSE(is_topology_equivalent(a, c));
}

TEST(RankWeights, StarGraph) {
  const Graph g = StarGraph(4, 1);
  const RankWeights center_in = get_recv_weights(g, 1);
  EXPECT_DOUBLE_EQ(center_in.self_weight, 0.25);
  EXPECT_EQ(center_in.neighbor_weights, (std::map<int, double>{{0, 0.25}, {2, 0.25}, {3, 0.25}}));
  const RankWeights leaf_out = get_send_weights(g, 3);
  EXPECT_DOUBLE_EQ(leaf_out.self_weight, 0.75);
  EXPECT_EQ(leaf_out.neighbor_weights, (std::map<int, double>{{1, 0.25}}));
}

TEST(RankWeights, DirectedRingReadsColumnsAndRows) {
  const Graph g = RingGraph(5, 2);  // r sends to r + 1
  const RankWeights in = get_recv_weights(g, 0);
  EXPECT_EQ(in.self_weight, 0.5);
  EXPECT_EQ(in.neighbor_weights, (std::map<int, double>{{4, 0.5}}));
  const RankWeights out = get_send_weights(g, 0);
  EXPECT_EQ(out.neighbor_weights, (std::map<int, double>{{1, 0.5}}));
}

TEST(RankWeights, NoSelfLoopMeansZeroAndBadRankThrows) {
  Graph g(3);
  g.add_edge(2, 0, 0.7);
  const RankWeights in = get_recv_weights(g, 0);
  EXPECT_EQ(in.self_weight, 0.0);
  EXPECT_EQ(in.neighbor_weights, (std::map<int, double>{{2, 0.7}}));
  EXPECT_THROW(get_recv_weights(g, 3), TopologyError);
  EXPECT_THROW(get_send_weights(g, -1), TopologyError);
}

}  // namespace
}  // namespace topology
}  // namespace flock
