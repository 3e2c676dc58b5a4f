// DynamicOnePeer: turn lists, picks, receives, and the exact-average property
// of the one-peer exponential schedule.
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/generators.h"
#include "flock/topology/one_peer.h"

namespace flock {
namespace topology {
namespace {

TEST(OnePeer, TurnListsAreClockwise) {
  const DynamicOnePeer schedule(ExponentialTwoGraph(10));
  EXPECT_EQ(schedule.turn_list(0), (std::vector<int>{1, 2, 4, 8}));
  // 7 + {1, 2, 4, 8} mod 10 = 8, 9, 1, 5, in that (clockwise) order.
  EXPECT_EQ(schedule.turn_list(7), (std::vector<int>{8, 9, 1, 5}));
  EXPECT_EQ(DynamicOnePeer(RingGraph(6)).turn_list(0), (std::vector<int>{1, 5}));
}

TEST(OnePeer, SendsInTurnAndReceivesFromWhoPicked) {
  const DynamicOnePeer schedule(ExponentialTwoGraph(10));
  for (std::int64_t k = 0; k < 8; ++k) {
    const int hop = 1 << (k % 4);
    EXPECT_EQ(schedule.send_ranks(k, 7), (std::vector<int>{(7 + hop) % 10})) << k;
    EXPECT_EQ(schedule.recv_ranks(k, 0), (std::vector<int>{(10 - hop) % 10})) << k;
  }
}

TEST(OnePeer, UnevenDegrees) {
  const DynamicOnePeer schedule(StarGraph(5));
  for (std::int64_t k = 0; k < 8; ++k) {
    const int leaf = 1 + static_cast<int>(k % 4);
    EXPECT_EQ(schedule.send_ranks(k, 0), (std::vector<int>{leaf}));
    EXPECT_EQ(schedule.recv_ranks(k, 0), (std::vector<int>{1, 2, 3, 4}));
    for (int j = 1; j < 5; ++j) {
      EXPECT_EQ(schedule.send_ranks(k, j), (std::vector<int>{0}));
      EXPECT_EQ(schedule.recv_ranks(k, j), j == leaf ? std::vector<int>{0} : std::vector<int>{});
    }
  }
}

TEST(OnePeer, RankWithoutOutNeighboursSendsNothing) {
  Graph g(3);
  g.add_edge(0, 2);
  g.add_edge(1, 2);
  const DynamicOnePeer schedule(g);
  EXPECT_TRUE(schedule.send_ranks(0, 2).empty());
  EXPECT_EQ(schedule.recv_ranks(5, 2), (std::vector<int>{0, 1}));
  const DynamicOnePeer single(RingGraph(1));
  EXPECT_TRUE(single.send_ranks(0, 0).empty());
  EXPECT_TRUE(single.recv_ranks(0, 0).empty());
}

// W_{k0} W_{k0+1} ... W_{k0+steps-1}: x_j <- sum_i W[i][j] x_i, so `steps`
// mixings map x to P^T x with P this product.
Eigen::MatrixXd product(const DynamicOnePeer& schedule, std::int64_t k0, int steps) {
  Eigen::MatrixXd p = Eigen::MatrixXd::Identity(schedule.size(), schedule.size());
  for (int t = 0; t < steps; ++t) p = p * schedule.mixing_graph(k0 + t).to_dense();
  return p;
}

TEST(OnePeer, ExactAverageInLog2Steps) {
  for (int m = 0; m <= 5; ++m) {
    const int n = 1 << m;
    const Eigen::MatrixXd average = Eigen::MatrixXd::Constant(n, n, 1.0 / n);
    for (const Graph& g : {ExponentialTwoGraph(n), ExponentialGraph(n, 2)}) {
      const DynamicOnePeer schedule(g);
      for (std::int64_t k0 : {0, 3, 10}) {
        EXPECT_LT((product(schedule, k0, m) - average).cwiseAbs().maxCoeff(), 1e-14)
            << "n=" << n << " k0=" << k0;
        if (m > 0) {
          EXPECT_GT((product(schedule, k0, m - 1) - average).cwiseAbs().maxCoeff(), 1e-3)
              << "n=" << n << " already exact after m-1 steps";
        }
      }
    }
  }
}

}  // namespace
}  // namespace topology
}  // namespace flock
