// Machine-level and inner/outer schedules against a reference written here
// straight from SEMANTICS.md's wording (the "+1 when it would land on or pass
// the outgoing rank" rule, floor(log2) by floating point), for every cluster
// shape where Bluefog defines them; then flock's extensions (M = 1, L <= 2).
#include <cmath>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/errors.h"
#include "flock/topology/hierarchical_schedules.h"

namespace flock {
namespace topology {
namespace {

int log2_floor(int x) {
  return static_cast<int>(std::floor(std::log2(static_cast<double>(x))));
}

int exp2_cycle(std::int64_t k, int x) {
  return 1 << static_cast<int>(k % (log2_floor(x) + 1));
}

// (send, recv) of `rank` at iteration k, for M >= 2 machines and L > 2.
std::pair<int, int> reference(int world, int L, int rank, std::int64_t k, bool expo2) {
  const int M = world / L;
  const int m = rank / L;
  const int l = rank % L;
  const int out = static_cast<int>(k % L);
  if (l == out) {
    const int hop = expo2 ? exp2_cycle(k, M - 1) : 1;
    return {((m + hop) % M) * L + l, ((m - hop + M) % M) * L + l};
  }
  const int base = expo2 ? exp2_cycle(k, L - 2) : 1;
  const int ahead_to_out = (out - l + L) % L;
  const int behind_to_out = (l - out + L) % L;
  const int forward = base + (base >= ahead_to_out ? 1 : 0);
  const int backward = base + (base >= behind_to_out ? 1 : 0);
  return {m * L + (l + forward) % L, m * L + (l - backward + L) % L};
}

TEST(InnerOuter, MatchesReferenceWhereBluefogIsDefined) {
  for (int machines = 2; machines <= 9; ++machines) {
    for (int local = 3; local <= 9; ++local) {
      const int world = machines * local;
      const InnerOuterRingDynamic ring(world, local);
      const InnerOuterExpo2Dynamic expo(world, local);
      for (std::int64_t k = 0; k <= 2 * world; ++k) {
        for (int r = 0; r < world; ++r) {
          const auto want_ring = reference(world, local, r, k, false);
          EXPECT_EQ(ring.send_ranks(k, r), std::vector<int>{want_ring.first});
          EXPECT_EQ(ring.recv_ranks(k, r), std::vector<int>{want_ring.second});
          const auto want_expo = reference(world, local, r, k, true);
          EXPECT_EQ(expo.send_ranks(k, r), std::vector<int>{want_expo.first})
              << "M=" << machines << " L=" << local << " k=" << k << " r=" << r;
          EXPECT_EQ(expo.recv_ranks(k, r), std::vector<int>{want_expo.second});
        }
      }
    }
  }
}

TEST(InnerOuter, HandWorkedExamples) {
  // 3 machines x 4: at k = 0 local rank 0 goes out; the inner ring is 1, 2, 3.
  const InnerOuterRingDynamic ring(12, 4);
  EXPECT_EQ(ring.send_ranks(0, 0), std::vector<int>{4});
  EXPECT_EQ(ring.recv_ranks(0, 0), std::vector<int>{8});
  EXPECT_EQ(ring.send_ranks(0, 3), std::vector<int>{1});  // skips 0
  EXPECT_EQ(ring.recv_ranks(0, 1), std::vector<int>{3});
  EXPECT_EQ(ring.send_ranks(0, 5), std::vector<int>{6});
  // 2 machines x 6, k = 1: local 1 goes out; inner hop 2 along 2, 3, 4, 5, 0.
  const InnerOuterExpo2Dynamic expo(12, 6);
  EXPECT_EQ(expo.inner_hop(1), 2);
  EXPECT_EQ(expo.send_ranks(1, 0), std::vector<int>{3});
  EXPECT_EQ(expo.recv_ranks(1, 0), std::vector<int>{4});
  EXPECT_EQ(expo.send_ranks(1, 1), std::vector<int>{7});
}

TEST(InnerOuter, ExtensionsBeyondBluefog) {
  // One machine: the outgoing rank idles, the others keep their ring.
  const InnerOuterRingDynamic single(4, 4);
  EXPECT_TRUE(single.send_ranks(1, 1).empty());
  EXPECT_EQ(single.send_ranks(1, 0), std::vector<int>{2});
  // Two local ranks: the one that stays in has nobody to talk to.
  const InnerOuterExpo2Dynamic pairs(6, 2);
  EXPECT_TRUE(pairs.send_ranks(0, 1).empty());
  EXPECT_TRUE(pairs.recv_ranks(0, 1).empty());
  EXPECT_EQ(pairs.send_ranks(0, 0), std::vector<int>{2});
  // One local rank: the outer schedule alone.
  const InnerOuterRingDynamic outer_only(5, 1);
  for (std::int64_t k = 0; k < 5; ++k) {
    EXPECT_EQ(outer_only.send_ranks(k, 4), std::vector<int>{0});
    EXPECT_EQ(outer_only.recv_ranks(k, 0), std::vector<int>{4});
  }
}

TEST(Exp2DynamicMachine, MatchesReference) {
  for (int machines = 2; machines <= 17; ++machines) {
    const Exp2DynamicMachine schedule(machines * 3, 3);
    ASSERT_EQ(schedule.size(), machines);
    for (std::int64_t k = 0; k <= 2 * machines; ++k) {
      const int hop = exp2_cycle(k, machines - 1);
      EXPECT_EQ(schedule.machine_hop(k), hop);
      for (int m = 0; m < machines; ++m) {
        EXPECT_EQ(schedule.send_ranks(k, m), std::vector<int>{(m + hop) % machines});
        EXPECT_EQ(schedule.recv_ranks(k, m), std::vector<int>{(m - hop + machines) % machines});
      }
    }
  }
}

TEST(Exp2DynamicMachine, MachineOfAndSingleMachine) {
  const Exp2DynamicMachine schedule(12, 4);
  EXPECT_EQ(schedule.machine_of(0), 0);
  EXPECT_EQ(schedule.machine_of(7), 1);
  EXPECT_EQ(schedule.machine_of(11), 2);
  EXPECT_THROW(schedule.machine_of(12), TopologyError);
  const Exp2DynamicMachine lone(4, 4);
  EXPECT_TRUE(lone.send_ranks(3, 0).empty());
  EXPECT_TRUE(lone.recv_ranks(3, 0).empty());
}

TEST(HierarchicalSchedules, ClusterShapeIsChecked) {
  EXPECT_THROW(Exp2DynamicMachine(10, 4), TopologyError);
  EXPECT_THROW(Exp2DynamicMachine(0, 1), TopologyError);
  EXPECT_THROW(InnerOuterRingDynamic(8, 0), TopologyError);
  EXPECT_THROW(InnerOuterExpo2Dynamic(-4, 2), TopologyError);
  try {
    InnerOuterExpo2Dynamic(10, 4);
    FAIL() << "no throw";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("InnerOuterExpo2Dynamic(10, 4)"), std::string::npos);
  }
}

}  // namespace
}  // namespace topology
}  // namespace flock
