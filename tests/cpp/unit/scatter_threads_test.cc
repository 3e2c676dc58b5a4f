// Reducescatter and alltoall through the engine, ranks played by threads over
// the in-process ThreadTransport (its ReduceScatter and Alltoallv): fused
// batches of uneven splits, averages, alltoall with zero rows. Runs under
// ThreadSanitizer with the other engine tests.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "../support/engine_requests.h"
#include "../support/engines_on_threads.h"
#include "flock/collectives/scatter_layout.h"

namespace flock {
namespace {

Config TestConfig() {
  Config config;
  config.cycle_time_ms = 2.0;
  return config;
}

double Value(int rank, int64_t i) {
  return static_cast<double>((rank * 5 + i * 3) % 7);
}

struct Scatter {
  std::vector<double> in, out;
  std::vector<int64_t> shape;
};

HandleId SubmitReducescatter(Engine& engine, const std::string& name, Scatter& s, int size,
                             int rank, ReduceOp op) {
  OpRequest request = MakeRequest(OpKind::kReducescatter, name,
                                  TensorView{s.in.data(), DataType::kFloat64, s.shape});
  request.reduce_op = op;
  const std::vector<int64_t> out_shape = ReducescatterShape(s.shape, size, rank);
  s.out.assign(static_cast<size_t>(out_shape[0] * 2), -1.0);
  auto handle = engine.Submit(std::move(request),
                              TensorView{s.out.data(), DataType::kFloat64, out_shape}, nullptr);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? handle.value() : -1;
}

class ScatterThreads : public ::testing::TestWithParam<int> {};

// Twelve reducescatters of 0 to 2 * size + 3 rows submitted together: the
// engine fuses them, each rank gets its rows of every one.
TEST_P(ScatterThreads, FusedUnevenReducescattersSumAndAverage) {
  const int size = GetParam();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    testing::OnRanks(size, TestConfig(), [&](int rank, Engine& engine) {
      std::vector<Scatter> tensors(12);
      std::vector<HandleId> handles;
      const int64_t fused_before = engine.counters().Snapshot().at("fused_batches");
      for (size_t k = 0; k < tensors.size(); ++k) {
        Scatter& s = tensors[k];
        s.shape = {static_cast<int64_t>(k % static_cast<size_t>(2 * size + 4)), 2};
        for (int64_t i = 0; i < s.shape[0] * 2; ++i) s.in.push_back(Value(rank, i + 10 * k));
        handles.push_back(
            SubmitReducescatter(engine, "rs." + std::to_string(k), s, size, rank, op));
      }
      for (size_t k = 0; k < tensors.size(); ++k) {
        ASSERT_TRUE(testing::WaitFor(engine, handles[k]).ok());
        const Scatter& s = tensors[k];
        const int64_t first = EvenRowSplit(s.shape[0], size).first_row[static_cast<size_t>(rank)];
        for (size_t i = 0; i < s.out.size(); ++i) {
          double expected = 0;
          for (int q = 0; q < size; ++q) expected += Value(q, first * 2 + i + 10 * k);
          if (op == ReduceOp::kAverage) expected /= size;
          ASSERT_DOUBLE_EQ(s.out[i], expected) << "tensor " << k << " at " << i;
        }
      }
      // Submitted within microseconds of each other, well inside one fusion window.
      EXPECT_GT(engine.counters().Snapshot().at("fused_batches"), fused_before);
    });
  }
}

TEST_P(ScatterThreads, AlltoallWithZeroRowsReturnsTheReceivedSplits) {
  const int size = GetParam();
  auto split = [size](int from) {
    std::vector<int64_t> s;
    for (int to = 0; to < size; ++to) s.push_back((from + 2 * to) % 3);
    return s;
  };
  testing::OnRanks(size, TestConfig(), [&](int rank, Engine& engine) {
    const std::vector<int64_t> mine = split(rank);
    const int64_t rows = std::accumulate(mine.begin(), mine.end(), int64_t{0});
    std::vector<int32_t> in(static_cast<size_t>(rows) + 1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = 100 * rank + static_cast<int32_t>(i);
    OpRequest request =
        MakeRequest(OpKind::kAlltoall, "a2a", TensorView{in.data(), DataType::kInt32, {rows}});
    request.splits = mine;
    auto handle = engine.Submit(std::move(request), TensorView{}, nullptr);
    ASSERT_TRUE(handle.ok());
    auto done = engine.Wait(handle.value(), std::chrono::milliseconds(50), nullptr);
    ASSERT_TRUE(done.ok() && done.value().status.ok());
    const GatheredTensor& out = *done.value().gathered;
    const auto* got = reinterpret_cast<const int32_t*>(out.bytes.data());
    size_t pos = 0;
    for (int from = 0; from < size; ++from) {
      const std::vector<int64_t> theirs = split(from);
      ASSERT_EQ(out.received_splits[static_cast<size_t>(from)], theirs[static_cast<size_t>(rank)]);
      const int64_t start = std::accumulate(theirs.begin(), theirs.begin() + rank, int64_t{0});
      for (int64_t i = 0; i < theirs[static_cast<size_t>(rank)]; ++i)
        ASSERT_EQ(got[pos++], 100 * from + static_cast<int32_t>(start + i));
    }
    ASSERT_EQ(static_cast<int64_t>(pos), out.shape[0]);
  });
}

INSTANTIATE_TEST_SUITE_P(Sizes, ScatterThreads, ::testing::Values(1, 2, 3, 4, 5));

}  // namespace
}  // namespace flock
