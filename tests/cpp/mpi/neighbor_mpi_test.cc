// Neighbor ops over real MPI, through the same request path as the Python
// bindings (runtime/neighbor_requests.h): results against the dense W·X
// reference computed from the topology's matrix, inline and lane transfers,
// neighbor_allgather order, and a mismatched dynamic pattern that fails
// instead of hanging.
#include <gtest/gtest.h>

#include <flock/topology/generators.h>
#include <Eigen/Dense>

#include <cstring>
#include <memory>
#include <vector>

#include "../support/engine_requests.h"
#include "flock/runtime/neighbor_requests.h"
#include "tests_runtime.h"

namespace flock::testing {
namespace {

// Rank r's value at element k: distinct per rank and position.
double Value(int rank, int64_t k) {
  return rank + 0.001 * static_cast<double>(k % 1000);
}

Status RunNeighborAllreduce(const std::string& name, std::vector<double>& in,
                            std::vector<double>& out, const NeighborWeights& weights,
                            bool check = true) {
  Runtime& runtime = *SharedRuntime();
  const int64_t n = static_cast<int64_t>(in.size());
  OpRequest op =
      MakeRequest(OpKind::kNeighborAllreduce, name, TensorView{in.data(), DataType::kFloat64, {n}});
  PrepareNeighborAllreduce(runtime, op, weights, check);
  auto handle = runtime.engine().Submit(std::move(op),
                                        TensorView{out.data(), DataType::kFloat64, {n}}, nullptr);
  return handle.ok() ? WaitFor(runtime.engine(), handle.value()) : handle.status();
}

class NeighborMpi : public ::testing::TestWithParam<bool> {  // weighted topology?
 protected:
  void TearDown() override {
    SharedRuntime()->set_topology(std::make_shared<const topology::Graph>(
        topology::ExponentialGraph(SharedRuntime()->size())));
  }
};

TEST_P(NeighborMpi, StaticTopologyMatchesTheDenseMixing) {
  Runtime& runtime = *SharedRuntime();
  const int rank = runtime.rank(), size = runtime.size();
  topology::Graph graph = topology::ExponentialGraph(size, 3);
  graph.set_weighted(GetParam());
  runtime.set_topology(std::make_shared<const topology::Graph>(graph));
  // Uniform: 1/(indegree + 1) for self and each in-neighbour; weighted: column `rank` of W.
  Eigen::MatrixXd w = graph.to_dense();
  if (!GetParam()) {
    for (int j = 0; j < size; ++j) {
      const double u = 1.0 / (graph.in_degree(j) + 1);
      for (int i = 0; i < size; ++i) w(i, j) = (i == j || graph.has_edge(i, j)) ? u : 0.0;
    }
  }
  for (int64_t count : {int64_t{0}, int64_t{7}, int64_t{100000}}) {  // empty, inline, lane
    std::vector<double> in(static_cast<size_t>(count)), out(in.size(), -1.0);
    for (int64_t k = 0; k < count; ++k) in[static_cast<size_t>(k)] = Value(rank, k);
    const std::vector<double> original = in;
    ASSERT_TRUE(RunNeighborAllreduce("static." + std::to_string(count), in, out, {}).ok());
    EXPECT_EQ(in, original);
    for (int64_t k = 0; k < count; k += std::max<int64_t>(1, count / 13)) {
      double expected = 0;
      for (int j = 0; j < size; ++j) expected += w(j, rank) * Value(j, k);
      ASSERT_NEAR(out[static_cast<size_t>(k)], expected, 1e-12) << "k " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, NeighborMpi, ::testing::Values(false, true));

TEST(NeighborMpiDynamic, RingOfPairsAndAMismatchThatFailsWithoutHanging) {
  Runtime& runtime = *SharedRuntime();
  const int rank = runtime.rank(), size = runtime.size();
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::vector<double> in(5, rank + 1.0), out(5);
  // Each rank sends to its successor with dst weight 2 and keeps half.
  NeighborWeights ring{0.5, std::vector<std::pair<int, double>>{{prev, 0.25}},
                       std::vector<std::pair<int, double>>{{next, 2.0}}};
  if (size == 2) ring.src_weights = {{prev, 0.25}};
  ASSERT_TRUE(RunNeighborAllreduce("dyn.ring", in, out, ring).ok());
  EXPECT_DOUBLE_EQ(out[4], 0.5 * (rank + 1) + 0.25 * 2.0 * (prev + 1));

  // Rank 0 expects rank 1's tensor; rank 1 sends nothing: both fail, nobody hangs.
  NeighborWeights lonely{1.0, std::vector<std::pair<int, double>>{},
                         std::vector<std::pair<int, double>>{}};
  if (rank == 0) lonely = {0.5, std::vector<std::pair<int, double>>{{1, 0.5}}, lonely.dst_weights};
  Status status = RunNeighborAllreduce("dyn.lonely", in, out, lonely);
  if (rank == 0) {
    EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.ToString();
    EXPECT_NE(status.message().find("rank 1"), std::string::npos) << status.message();
  }
  ASSERT_TRUE(RunNeighborAllreduce("dyn.after", in, out, ring).ok());  // the next call works
}

TEST(NeighborMpiAllgather, InNeighboursInOrderWithRowsDifferingPerRank) {
  Runtime& runtime = *SharedRuntime();
  const int rank = runtime.rank(), size = runtime.size();
  const topology::Graph graph = topology::ExponentialGraph(size);
  runtime.set_topology(std::make_shared<const topology::Graph>(graph));
  const std::vector<int> sources = graph.in_neighbors(rank);
  std::vector<float> in(static_cast<size_t>(2 * (rank + 1)), static_cast<float>(rank));
  OpRequest op = MakeRequest(OpKind::kNeighborAllgather, "gather",
                             TensorView{in.data(), DataType::kFloat32, {rank + 1, 2}});
  PrepareNeighborAllgather(runtime, op, std::nullopt, std::nullopt, true);
  auto handle = runtime.engine().Submit(std::move(op), TensorView{}, nullptr);
  ASSERT_TRUE(handle.ok());
  auto done = runtime.engine().Wait(handle.value(), std::chrono::milliseconds(50), nullptr);
  ASSERT_TRUE(done.ok() && done.value().status.ok());
  const auto& gathered = done.value().gathered;
  ASSERT_NE(gathered, nullptr);
  std::vector<float> expected;
  for (int j : sources) expected.insert(expected.end(), static_cast<size_t>(2 * (j + 1)), j);
  int64_t rows = 0;
  for (int j : sources) rows += j + 1;
  EXPECT_EQ(gathered->shape, (std::vector<int64_t>{rows, 2}));
  ASSERT_EQ(gathered->bytes.size(), expected.size() * sizeof(float));
  if (!expected.empty())  // one rank: no in-neighbours, nothing gathered
    EXPECT_EQ(std::memcmp(gathered->bytes.data(), expected.data(), gathered->bytes.size()), 0);
}

}  // namespace
}  // namespace flock::testing
