// Every dynamic schedule, all ranks together, every iteration k = 0..2n: sends
// and receives match exactly. Plus the shared parts of DynamicSchedule: the
// uniform weight rule, the mixing graph, argument checks, and
// transpose_rank_lists.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/analysis.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "flock/topology/hierarchical_schedules.h"
#include "flock/topology/one_peer.h"
#include "schedule_consistency.h"

namespace flock {
namespace topology {
namespace {

using testing_util::expect_sends_match_receives;

TEST(ScheduleConsistency, OnePeerOnEveryGenerator) {
  for (int n = 1; n <= 17; ++n) {
    const std::vector<std::pair<std::string, Graph>> graphs = {
        {"Exp2", ExponentialTwoGraph(n)},
        {"Exp3", ExponentialGraph(n, 3)},
        {"SymExp", SymmetricExponentialGraph(n)},
        {"Mesh", MeshGrid2DGraph(n)},
        {"Star", StarGraph(n, n / 2)},
        {"Ring0", RingGraph(n, 0)},
        {"Ring1", RingGraph(n, 1)},
        {"Full", FullyConnectedGraph(n)}};
    for (const auto& named : graphs) {
      expect_sends_match_receives(DynamicOnePeer(named.second), 2 * n,
                                  "OnePeer " + named.first + " n=" + std::to_string(n));
    }
  }
}

TEST(ScheduleConsistency, OnePeerWithSinkAndNoSelfLoops) {
  Graph g(5);  // 4 has no out-neighbour; no self loops anywhere
  for (int i = 0; i < 4; ++i) {
    g.add_edge(i, i + 1);
    g.add_edge(i, (i + 3) % 5);
  }
  expect_sends_match_receives(DynamicOnePeer(g), 10, "OnePeer sink");
}

TEST(ScheduleConsistency, MachineAndInnerOuterSchedules) {
  for (int machines = 1; machines <= 9; ++machines) {
    for (int local = 1; local <= 7; ++local) {
      const int world = machines * local;
      const std::string shape = " M=" + std::to_string(machines) + " L=" + std::to_string(local);
      expect_sends_match_receives(Exp2DynamicMachine(world, local), 2 * machines,
                                  "Exp2Machine" + shape);
      expect_sends_match_receives(InnerOuterRingDynamic(world, local), 2 * world,
                                  "InnerOuterRing" + shape);
      expect_sends_match_receives(InnerOuterExpo2Dynamic(world, local), 2 * world,
                                  "InnerOuterExpo2" + shape);
    }
  }
}

TEST(StepWeights, UniformRule) {
  const DynamicOnePeer schedule(StarGraph(5));
  // k = 2: every leaf sends to the centre 0, the centre sends to leaf 3.
  const StepWeights center = schedule.weights(2, 0);
  EXPECT_DOUBLE_EQ(center.self_weight, 0.2);
  EXPECT_EQ(center.src_weights, (std::map<int, double>{{1, 0.2}, {2, 0.2}, {3, 0.2}, {4, 0.2}}));
  EXPECT_EQ(center.dst_weights, (std::map<int, double>{{3, 1.0}}));
  const StepWeights leaf3 = schedule.weights(2, 3);
  EXPECT_DOUBLE_EQ(leaf3.self_weight, 0.5);
  EXPECT_EQ(leaf3.src_weights, (std::map<int, double>{{0, 0.5}}));
  const StepWeights leaf1 = schedule.weights(2, 1);
  EXPECT_DOUBLE_EQ(leaf1.self_weight, 1.0);
  EXPECT_TRUE(leaf1.src_weights.empty());
  EXPECT_EQ(leaf1.dst_weights, (std::map<int, double>{{0, 1.0}}));
}

TEST(StepWeights, MixingGraphIsColumnStochasticAndFollowsReceives) {
  const std::vector<std::shared_ptr<DynamicSchedule>> schedules = {
      std::make_shared<DynamicOnePeer>(MeshGrid2DGraph(12)),
      std::make_shared<Exp2DynamicMachine>(24, 4), std::make_shared<InnerOuterRingDynamic>(12, 4),
      std::make_shared<InnerOuterExpo2Dynamic>(30, 6)};
  for (const auto& schedule : schedules) {
    for (std::int64_t k = 0; k < 12; ++k) {
      const Graph w = schedule->mixing_graph(k);
      EXPECT_TRUE(is_column_stochastic(w)) << k;
      for (int r = 0; r < w.size(); ++r) {
        EXPECT_EQ(w.in_neighbors(r), schedule->recv_ranks(k, r)) << k << " " << r;
        EXPECT_GT(w.self_weight(r), 0.0);
      }
    }
  }
}

TEST(ScheduleArguments, Rejected) {
  const DynamicOnePeer one_peer(RingGraph(4));
  EXPECT_THROW(one_peer.send_ranks(-1, 0), TopologyError);
  EXPECT_THROW(one_peer.recv_ranks(0, 4), TopologyError);
  EXPECT_THROW(one_peer.weights(0, -1), TopologyError);
  EXPECT_THROW(one_peer.mixing_graph(-3), TopologyError);
  try {
    InnerOuterRingDynamic(8, 4).send_ranks(2, 8);
    FAIL() << "no throw";
  } catch (const TopologyError& e) {
    EXPECT_STREQ(e.what(), "send_ranks(2, 8): node 8 is out of range [0, 8)");
  }
}

TEST(ScheduleArguments, LargeIterationsAreFine) {
  const std::int64_t k = (std::int64_t{1} << 40) + 3;
  const DynamicOnePeer one_peer(ExponentialTwoGraph(8));  // turn lists of 3
  EXPECT_EQ(one_peer.send_ranks(k, 0), one_peer.send_ranks(k % 3, 0));
  const InnerOuterExpo2Dynamic expo(40, 5);
  EXPECT_EQ(expo.send_ranks(k, 7), expo.send_ranks(k % 60, 7));  // period lcm(5, 3, 2) | 60
}

TEST(TransposeRankLists, InvertsSendsIntoReceives) {
  const std::vector<std::vector<int>> sends = {{1, 2}, {2}, {}, {0, 1, 2}};
  const std::vector<std::vector<int>> recvs = {{3}, {0, 3}, {0, 1, 3}, {}};
  EXPECT_EQ(transpose_rank_lists(sends), recvs);
  EXPECT_EQ(transpose_rank_lists(recvs), sends);
  EXPECT_TRUE(transpose_rank_lists({}).empty());
}

TEST(TransposeRankLists, RejectsBadEntries) {
  EXPECT_THROW(transpose_rank_lists({{1}, {2}}), TopologyError);
  EXPECT_THROW(transpose_rank_lists({{-1}, {}}), TopologyError);
  EXPECT_THROW(transpose_rank_lists({{1, 1}, {}}), TopologyError);
}

}  // namespace
}  // namespace topology
}  // namespace flock
