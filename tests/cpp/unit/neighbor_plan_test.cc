// Neighbor-op plans and their exchange steps (pure): weights for every
// argument form, the errors for bad ones, and the slices of the hierarchical op.
#include <gtest/gtest.h>

#include "flock/neighbor/neighbor_plan.h"
#include "flock/neighbor/op_steps.h"
#include "flock/topology/generators.h"
#include "flock/topology/graph.h"

namespace flock {
namespace {

topology::Graph Ring(int n, bool weighted) {
  topology::Graph g(n, weighted);
  for (int i = 0; i < n; ++i) {
    g.add_edge(i, i, 0.5);
    g.add_edge(i, (i + 1) % n, 0.25);
    g.add_edge((i + 1) % n, i, 0.25);
  }
  return g;
}

TEST(NeighborPlan, StaticUniformWeightsAreOneOverInDegreePlusOne) {
  const topology::Graph g = Ring(5, /*weighted=*/false);
  auto plan = PlanNeighborAllreduce(&g, 0, 5, {}, true);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_DOUBLE_EQ(plan.value().self_weight, 1.0 / 3);
  ASSERT_EQ(plan.value().recvs.size(), 2u);
  EXPECT_EQ(plan.value().recvs[0].peer, 1);
  EXPECT_EQ(plan.value().recvs[1].peer, 4);
  EXPECT_DOUBLE_EQ(plan.value().recvs[1].weight, 1.0 / 3);
  ASSERT_EQ(plan.value().sends.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.value().sends[0].scale, 1.0);
  EXPECT_FALSE(plan.value().dynamic);
}

TEST(NeighborPlan, StaticWeightedUsesTheReceiversColumn) {
  topology::Graph g = Ring(4, /*weighted=*/true);
  g.add_edge(3, 0, 0.125);
  auto plan = PlanNeighborAllreduce(&g, 0, 4, {}, true);
  ASSERT_TRUE(plan.ok());
  EXPECT_DOUBLE_EQ(plan.value().self_weight, 0.5);
  ASSERT_EQ(plan.value().recvs.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.value().recvs[1].weight, 0.125);  // W[3][0]
}

TEST(NeighborPlan, CallerWeightsOnTheStaticGraphGiveUnlistedNeighboursZero) {
  const topology::Graph g = Ring(4, false);
  NeighborWeights w;
  w.self_weight = 0.6;
  w.src_weights = std::vector<std::pair<int, double>>{{3, 0.4}};
  auto plan = PlanNeighborAllreduce(&g, 0, 4, w, true);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan.value().recvs.size(), 2u);  // both in-neighbours still send
  EXPECT_DOUBLE_EQ(plan.value().recvs[0].weight, 0.0);
  EXPECT_DOUBLE_EQ(plan.value().recvs[1].weight, 0.4);

  w.src_weights = std::vector<std::pair<int, double>>{{2, 0.4}};  // not an in-neighbour
  auto bad = PlanNeighborAllreduce(&g, 0, 4, w, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not an in-neighbour"), std::string::npos);
}

TEST(NeighborPlan, DynamicFollowsTheArgumentsOutsideTheGraph) {
  const topology::Graph g = Ring(6, false);
  NeighborWeights w;
  w.self_weight = 0.5;
  w.src_weights = std::vector<std::pair<int, double>>{{3, 0.5}};
  w.dst_weights = std::vector<std::pair<int, double>>{{3, 2.0}, {2, 1.0}};
  auto plan = PlanNeighborAllreduce(&g, 0, 6, w, false);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan.value().dynamic);
  ASSERT_EQ(plan.value().sends.size(), 2u);
  EXPECT_EQ(plan.value().sends[0].peer, 2);  // sorted
  EXPECT_DOUBLE_EQ(plan.value().sends[1].scale, 2.0);
  EXPECT_EQ(plan.value().recvs[0].peer, 3);
  EXPECT_TRUE(PlanNeighborAllreduce(nullptr, 0, 6, w, false).ok());  // no topology needed
}

TEST(NeighborPlan, BadArgumentsSayWhatIsWrong) {
  const topology::Graph g = Ring(4, false);
  auto expect_error = [&](const NeighborWeights& w, const std::string& text) {
    auto plan = PlanNeighborAllreduce(&g, 1, 4, w, true);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(text), std::string::npos) << plan.status().message();
  };
  NeighborWeights only_self;
  only_self.self_weight = 0.5;
  expect_error(only_self, "must be given together");
  NeighborWeights dst_only;
  dst_only.dst_weights = std::vector<std::pair<int, double>>{{2, 1.0}};
  expect_error(dst_only, "needs self_weight");
  NeighborWeights out_of_range{0.5, std::vector<std::pair<int, double>>{{9, 0.5}},
                               std::vector<std::pair<int, double>>{{2, 1.0}}};
  expect_error(out_of_range, "out of range for 4 ranks");
  NeighborWeights self_peer{0.5, std::vector<std::pair<int, double>>{{0, 0.5}},
                            std::vector<std::pair<int, double>>{{1, 1.0}}};
  expect_error(self_peer, "names this rank (1)");
  NeighborWeights twice{0.5, std::vector<std::pair<int, double>>{{0, 0.5}},
                        std::vector<std::pair<int, double>>{{2, 1.0}, {2, 1.0}}};
  expect_error(twice, "twice");
  auto none = PlanNeighborAllreduce(nullptr, 0, 4, {}, true);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("set_topology()"), std::string::npos);
  auto machines = PlanNeighborAllreduce(nullptr, 0, 2, {}, false, MachineArgNames());
  EXPECT_NE(machines.status().message().find("set_machine_topology()"), std::string::npos);
}

TEST(NeighborPlan, AllgatherStaticOrderAndDynamicOrder) {
  const topology::Graph g = Ring(5, false);
  auto stat = PlanNeighborAllgather(&g, 2, 5, std::nullopt, std::nullopt, false);
  ASSERT_TRUE(stat.ok());
  ASSERT_EQ(stat.value().recvs.size(), 2u);
  EXPECT_EQ(stat.value().recvs[0].peer, 1);
  auto dyn = PlanNeighborAllgather(&g, 2, 5, std::vector<int>{4, 0}, std::vector<int>{1}, true);
  ASSERT_TRUE(dyn.ok());
  EXPECT_EQ(dyn.value().recvs[0].peer, 4);  // the caller's order
  EXPECT_EQ(dyn.value().recvs[1].peer, 0);
  EXPECT_FALSE(stat.value().check);
  EXPECT_TRUE(dyn.value().check);  // enable_topo_check reaches the plan
  EXPECT_FALSE(PlanNeighborAllgather(&g, 2, 5, std::vector<int>{4}, std::nullopt, true).ok());
}

TEST(NeighborPlan, RejectedCallsTellStaticAndNamedPeers) {
  const topology::Graph g = Ring(6, false);
  EXPECT_EQ(PeersOfRejectedCall(&g, 0, 6, {3, 0, 42}), (std::vector<int>{1, 3, 5}));
}

TEST(OpSteps, SlicesCoverTheTensorInOrder) {
  for (int64_t count : {0, 1, 5, 7, 1000}) {
    for (int parts : {1, 2, 3, 4}) {
      EXPECT_EQ(SliceBegin(count, parts, 0), 0);
      EXPECT_EQ(SliceBegin(count, parts, parts), count);
      for (int j = 0; j < parts; ++j)
        EXPECT_LE(SliceBegin(count, parts, j), SliceBegin(count, parts, j + 1));
    }
  }
}

TEST(OpSteps, HierarchicalStepsSpreadMachineTrafficOverLocalRanks) {
  // 3 machines of 2 ranks; this is rank 3 = machine 1, local rank 1; machine ring.
  NeighborPlan machines;
  machines.self_weight = 1.0 / 3;
  machines.sends = {{0, 1.0}, {2, 1.0}};
  machines.recvs = {{0, 1.0 / 3}, {2, 1.0 / 3}};
  auto steps = HierarchicalSteps(machines, 10, 2, 1, 1, false);
  ASSERT_EQ(steps.size(), 3u);
  const ExchangeStep& scatter = steps[0];
  EXPECT_EQ(scatter.self_offset, 5);  // slice 1 of 10 elements
  EXPECT_EQ(scatter.self_count, 5);
  ASSERT_EQ(scatter.sends.size(), 1u);
  EXPECT_EQ(scatter.sends[0].peer, 2);    // local rank 0 of machine 1
  EXPECT_EQ(scatter.sends[0].offset, 0);  // gets slice 0
  EXPECT_DOUBLE_EQ(scatter.recvs[0].weight, 0.5);
  const ExchangeStep& exchange = steps[1];
  ASSERT_EQ(exchange.sends.size(), 2u);
  EXPECT_EQ(exchange.sends[0].peer, 1);   // local rank 1 of machine 0
  EXPECT_EQ(exchange.sends[1].peer, 5);   // local rank 1 of machine 2
  EXPECT_EQ(exchange.sends[0].count, 5);  // only this rank's slice crosses machines
  EXPECT_FALSE(exchange.check);
  const ExchangeStep& gather = steps[2];
  EXPECT_EQ(gather.mode, ExchangeStep::Mode::kPlace);
  EXPECT_EQ(gather.self_target_offset, 5);
  EXPECT_EQ(gather.recvs[0].offset, 0);
  EXPECT_EQ(gather.recvs[0].count, 5);
}

}  // namespace
}  // namespace flock
