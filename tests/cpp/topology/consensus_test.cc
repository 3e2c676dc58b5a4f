// Average consensus simulated in-process (consensus.h): measured step counts
// against the spectral prediction for every static generator at the sizes of
// examples/cpp/topology_experiment.cc, the bound e_k <= |lambda_2|^k of normal
// W, the exact average of the one-peer schedule, and argument errors.
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "flock/topology/analysis.h"
#include "flock/topology/consensus.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "flock/topology/one_peer.h"
#include "flock/topology/schedule.h"

namespace flock {
namespace topology {
namespace {

constexpr double kEps = 1e-6;
constexpr std::uint32_t kSeed = 2024;  // the example's default start

struct Named {
  std::string name;
  Graph graph;
};

std::vector<Named> static_generators(int n) {
  return {{"ExponentialTwoGraph", ExponentialTwoGraph(n)},
          {"ExponentialGraph(3)", ExponentialGraph(n, 3)},
          {"SymmetricExponentialGraph", SymmetricExponentialGraph(n)},
          {"MeshGrid2DGraph", MeshGrid2DGraph(n)},
          {"StarGraph", StarGraph(n)},
          {"RingGraph(0)", RingGraph(n, 0)},
          {"RingGraph(1)", RingGraph(n, 1)},
          {"RingGraph(2)", RingGraph(n, 2)},
          {"FullyConnectedGraph", FullyConnectedGraph(n)}};
}

TEST(Consensus, MeasuredAgreesWithPredictionForStaticGenerators) {
  for (int n : {8, 16, 32, 64}) {
    for (const Named& g : static_generators(n)) {
      const ConsensusRun run = run_consensus(g.graph, random_start(n, kSeed), kEps, 1000000);
      ASSERT_TRUE(run.converged) << g.name << " n=" << n;
      const std::int64_t predicted = predicted_consensus_iterations(g.graph, kEps).value();
      EXPECT_TRUE(consensus_matches_prediction(run.iterations, predicted, kEps, n))
          << g.name << " n=" << n << ": measured " << run.iterations << ", predicted " << predicted;
    }
  }
}

TEST(Consensus, ErrorNeverExceedsTheSpectralBoundForNormalW) {
  for (const Named& g : static_generators(12)) {
    const double lambda2 = second_largest_eigenvalue_modulus(g.graph);
    const ConsensusRun run = run_consensus(g.graph, random_start(12, 7), 1e-8, 100000);
    for (std::size_t k = 0; k < run.errors.size(); ++k) {
      ASSERT_LE(run.errors[k], std::pow(lambda2, static_cast<double>(k)) + 1e-12)
          << g.name << " k=" << k;
    }
  }
}

TEST(Consensus, FullyConnectedAveragesInOneStepAndOneNodeInNone) {
  EXPECT_EQ(run_consensus(FullyConnectedGraph(9), random_start(9, 1), kEps, 10).iterations, 1);
  const ConsensusRun single = run_consensus(RingGraph(1), random_start(1, 1), kEps, 10);
  EXPECT_TRUE(single.converged);
  EXPECT_EQ(single.iterations, 0);
}

TEST(Consensus, DisconnectedGraphNeverConverges) {
  Graph g(4, true);
  for (int i = 0; i < 4; ++i) g.set_self_weight(i, 1.0);
  const ConsensusRun run = run_consensus(g, random_start(4, 3), kEps, 50);
  EXPECT_FALSE(run.converged);
  EXPECT_EQ(run.iterations, 50);
  EXPECT_EQ(run.errors.size(), 51u);
}

TEST(Consensus, OnePeerOnExponentialTwoIsExactAfterOnePeriod) {
  for (int m = 1; m <= 6; ++m) {
    const int n = 1 << m;
    const DynamicOnePeer schedule(ExponentialTwoGraph(n));
    EXPECT_NEAR(period_second_eigenvalue_modulus(schedule, m), 0.0, 1e-12) << n;
    EXPECT_EQ(predicted_periodic_consensus_iterations(schedule, m, kEps).value(), m) << n;
    const ConsensusRun run = run_consensus(schedule, random_start(n, kSeed), kEps, 1000);
    EXPECT_EQ(run.iterations, m) << n;
    EXPECT_LT(run.errors.back(), 1e-12) << n;
  }
}

// A schedule given by its receive lists, one set per step, repeating.
class ListSchedule : public DynamicSchedule {
 public:
  explicit ListSchedule(std::vector<std::vector<std::vector<int>>> steps)
      : steps_(std::move(steps)) {}
  int size() const override { return static_cast<int>(steps_[0].size()); }
  std::vector<int> recv_ranks(std::int64_t k, int node) const override {
    return steps_[static_cast<std::size_t>(k) % steps_.size()][static_cast<std::size_t>(node)];
  }
  std::vector<int> send_ranks(std::int64_t k, int node) const override {
    return transpose_rank_lists(steps_[static_cast<std::size_t>(k) % steps_.size()])[node];
  }

 private:
  std::vector<std::vector<std::vector<int>>> steps_;
};

// W^T of step k by hand from the receive lists and the uniform rule.
Eigen::MatrixXd transposed_weights_of(const DynamicSchedule& schedule, std::int64_t k) {
  Eigen::MatrixXd wt = Eigen::MatrixXd::Zero(schedule.size(), schedule.size());
  for (int r = 0; r < schedule.size(); ++r) {
    const std::vector<int> sources = schedule.recv_ranks(k, r);
    const double share = 1.0 / static_cast<double>(sources.size() + 1);
    wt(r, r) = share;
    for (int source : sources) wt(r, source) = share;
  }
  return wt;
}

// The steps a run takes (built from the receive lists, without a Graph) and the
// mixing graphs and weights(), against dense products written from the lists.
TEST(Consensus, ScheduleStepsMatchTheDenseWeightsOfEveryNode) {
  const ListSchedule lists(
      {{{4}, {0, 2}, {}, {0, 1, 2, 4}, {3}}, {{1, 2, 3, 4}, {}, {1}, {2}, {0, 3}}});
  const DynamicOnePeer one_peer(ExponentialGraph(12, 3));
  for (const DynamicSchedule* schedule : {static_cast<const DynamicSchedule*>(&lists),
                                          static_cast<const DynamicSchedule*>(&one_peer)}) {
    const Eigen::VectorXd x0 = random_start(schedule->size(), kSeed);
    const ConsensusRun run = run_consensus(*schedule, x0, 1e-300, 7);
    ASSERT_EQ(run.errors.size(), 8u);
    Eigen::VectorXd x = x0;
    const double start = (x0.array() - x0.mean()).matrix().norm();
    for (std::int64_t k = 0; k < 7; ++k) {
      const Eigen::MatrixXd wt = transposed_weights_of(*schedule, k);
      EXPECT_TRUE(schedule->mixing_graph(k).to_dense().transpose().isApprox(wt, 1e-15))
          << "step " << k;
      for (int r = 0; r < schedule->size(); ++r) {
        const StepWeights w = schedule->weights(k, r);
        EXPECT_EQ(w.self_weight, wt(r, r)) << "step " << k << ", node " << r;
        for (const auto& [source, weight] : w.src_weights) EXPECT_EQ(weight, wt(r, source));
        EXPECT_EQ(w.src_weights.size(), schedule->recv_ranks(k, r).size());
      }
      x = wt * x;
      EXPECT_NEAR(run.errors[static_cast<std::size_t>(k + 1)],
                  (x.array() - x0.mean()).matrix().norm() / start, 1e-14)
          << "step " << k << " of a schedule of " << schedule->size() << " nodes";
    }
  }
}

// Every path that reads receive lists refuses a bad one, and says what is wrong.
TEST(Consensus, AReceiveListThatIsNotSortedOrNamesTheNodeIsAnError) {
  const std::vector<std::pair<std::vector<int>, std::string>> bad_lists = {
      {{2, 1}, "not sorted"},
      {{1, 1}, "with a repeat"},
      {{0, 1}, "the node itself"},
      {{3}, "out of range"},
      {{-1}, "out of range"}};
  for (const auto& [bad, fault] : bad_lists) {
    const ListSchedule schedule({{bad, {}, {}}});
    const std::vector<std::function<void()>> paths = {
        [&] { run_consensus(schedule, random_start(3, 1), kEps, 3); },
        [&] { period_second_eigenvalue_modulus(schedule, 1); }, [&] { schedule.mixing_graph(0); },
        [&] { schedule.weights(0, 0); }};
    for (const auto& path : paths) {
      try {
        path();
        ADD_FAILURE() << "no error for " << fault;
      } catch (const TopologyError& e) {
        EXPECT_NE(std::string(e.what()).find("node 0's receive list"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find(fault), std::string::npos) << e.what();
      }
    }
  }
}

TEST(Consensus, RandomStartIsDeterministicAndInRange) {
  const Eigen::VectorXd a = random_start(100, 5), b = random_start(100, 5);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, random_start(100, 6));
  EXPECT_GE(a.minCoeff(), -1.0);
  EXPECT_LT(a.maxCoeff(), 1.0);
}

TEST(Consensus, TolerancePassesTheTheoremAndRefusesFarOffCounts) {
  // eps = 1e-6, 9 nodes (s = 1%): a start may be a third of the prediction ahead,
  // never behind; at 10^5 nodes (s = 9.5e-5) two thirds.
  EXPECT_TRUE(consensus_matches_prediction(100, 100, kEps, 9));
  EXPECT_TRUE(consensus_matches_prediction(101, 100, kEps, 9));
  EXPECT_FALSE(consensus_matches_prediction(102, 100, kEps, 9));
  EXPECT_TRUE(consensus_matches_prediction(66, 100, kEps, 9));
  EXPECT_FALSE(consensus_matches_prediction(60, 100, kEps, 9));
  EXPECT_TRUE(consensus_matches_prediction(34, 100, kEps, 100000));
  EXPECT_FALSE(consensus_matches_prediction(30, 100, kEps, 100000));
  EXPECT_FALSE(consensus_matches_prediction(102, 100, kEps, 100000));
  EXPECT_THROW(consensus_matches_prediction(100, 100, kEps, 0), TopologyError);
}

TEST(Consensus, ArgumentErrorsThrow) {
  const Graph g = RingGraph(4);
  EXPECT_THROW(run_consensus(g, random_start(5, 1), kEps, 10), TopologyError);
  EXPECT_THROW(run_consensus(g, random_start(4, 1), 0.0, 10), TopologyError);
  EXPECT_THROW(run_consensus(g, random_start(4, 1), kEps, -1), TopologyError);
  EXPECT_THROW(random_start(0, 1), TopologyError);
  EXPECT_THROW(period_second_eigenvalue_modulus(DynamicOnePeer(g), 0), TopologyError);
}

}  // namespace
}  // namespace topology
}  // namespace flock
