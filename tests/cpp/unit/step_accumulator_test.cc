// StepAccumulator against the dense result, over every arrival order of four
// sources, every mix of inline payloads and lanes, and lanes landing at random
// points in between (the way NeighborExchange drives it): the sum lands in the
// target itself or in a wider accumulator (float16, in place), the first lane
// in the sum itself, the others one at a time in the scratch buffer.
#include "flock/neighbor/step_accumulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "flock/common/half.h"

namespace flock {
namespace {

constexpr int64_t kCount = 6;
constexpr int kSources = 4;

struct Case {
  DataType dtype;
  bool in_place;
};

// Source i's tensor (as doubles), its weight and the sender's scale; source 2
// weighs 0 (received, unused); source 3 covers elements [2, 5) only.
double Value(int source, int64_t k) {
  return 0.5 * (source + 1) + 0.25 * k;
}
const double kWeights[kSources] = {0.25, 0.5, 0.0, 0.75};
const double kScales[kSources] = {1.0, 2.0, 1.0, 0.5};
constexpr double kSelfWeight = 0.125;

ExchangeStep Spec() {
  ExchangeStep spec;
  spec.mode = ExchangeStep::Mode::kReduce;
  spec.self_weight = kSelfWeight;
  spec.self_count = spec.target_count = kCount;
  for (int i = 0; i < kSources; ++i) {
    StepRecv recv;
    recv.peer = i + 1;
    recv.weight = kWeights[i];
    recv.offset = i == 3 ? 2 : 0;
    recv.count = i == 3 ? 3 : kCount;
    spec.recvs.push_back(recv);
  }
  return spec;
}

std::vector<char> Encode(DataType dtype, const std::vector<double>& values) {
  std::vector<char> bytes(values.size() * DataTypeSize(dtype));
  for (size_t k = 0; k < values.size(); ++k) {
    if (dtype == DataType::kFloat64) std::memcpy(&bytes[k * 8], &values[k], 8);
    if (dtype == DataType::kFloat32) {
      const float f = static_cast<float>(values[k]);
      std::memcpy(&bytes[k * 4], &f, 4);
    }
    if (dtype == DataType::kFloat16) {
      const Float16 h = ToFloat16(static_cast<float>(values[k]));
      std::memcpy(&bytes[k * 2], &h, 2);
    }
  }
  return bytes;
}

double Decode(DataType dtype, const std::vector<char>& bytes, size_t k) {
  if (dtype == DataType::kFloat64) return reinterpret_cast<const double*>(bytes.data())[k];
  if (dtype == DataType::kFloat32) return reinterpret_cast<const float*>(bytes.data())[k];
  return ToFloat(reinterpret_cast<const Float16*>(bytes.data())[k]);
}

double Expected(int64_t k) {
  double sum = kSelfWeight * Value(-1, k);
  for (int i = 0; i < kSources; ++i) {
    const bool covered = i != 3 || (k >= 2 && k < 5);
    if (covered) sum += kWeights[i] * kScales[i] * Value(i, k);
  }
  return sum;
}

// One run: sources arrive in `order`, lanes where `lanes` has the bit; a lane
// in flight lands before the next arrival with probability 1/2 (rng).
void RunOnce(const Case& c, const std::vector<int>& order, int lanes, std::mt19937& rng) {
  BufferPool pool;
  const ExchangeStep spec = Spec();
  std::vector<double> self(kCount);
  for (int64_t k = 0; k < kCount; ++k) self[k] = Value(-1, k);
  std::vector<char> input = Encode(c.dtype, self), output(input.size(), 0);
  std::vector<std::vector<char>> data(kSources);
  for (int i = 0; i < kSources; ++i) {
    std::vector<double> x(static_cast<size_t>(spec.recvs[i].count));
    for (size_t k = 0; k < x.size(); ++k) x[k] = Value(i, spec.recvs[i].offset + int64_t(k));
    data[i] = Encode(c.dtype, x);
  }
  char* target = c.in_place ? input.data() : output.data();
  Status status;
  StepAccumulator sum;
  sum.Begin(pool, spec, c.dtype, target, input.data(), input.data(), &status);
  std::vector<bool> done(kSources, false);
  int in_acc = -1, in_scratch = -1;  // lanes in flight
  auto start_scratch = [&] {
    if (in_scratch < 0) in_scratch = sum.NextScratchLane();
  };
  auto land_acc = [&] {
    std::memcpy(target, data[in_acc].data(), data[in_acc].size());
    in_acc = -1;
    sum.AccumulatorLanded(Status::OK(), [&](int k) { done[k] = true; });
    start_scratch();
  };
  auto land_scratch = [&] {
    std::memcpy(sum.scratch(), data[in_scratch].data(), data[in_scratch].size());
    in_scratch = -1;
    const int finished = sum.ScratchLanded(true);
    if (finished >= 0) done[finished] = true;
    start_scratch();
  };
  auto maybe_land = [&] {
    if (in_acc >= 0 && rng() % 2) land_acc();
    if (in_scratch >= 0 && rng() % 2) land_scratch();
  };
  for (int i : order) {
    maybe_land();
    sum.Announce(i, kScales[i], static_cast<int64_t>(data[i].size()));
    if (!(lanes & (1 << i))) {
      if (sum.AddInline(i, data[i].data())) done[i] = true;
      continue;
    }
    if (void* acc = sum.TakeAccumulatorFor(i)) {
      ASSERT_EQ(acc, static_cast<void*>(target));
      in_acc = i;
    } else {
      sum.QueueLane(i);
      start_scratch();
    }
  }
  while (in_acc >= 0 || in_scratch >= 0) {
    if (in_acc >= 0) land_acc();
    if (in_scratch >= 0) land_scratch();
  }
  ASSERT_TRUE(sum.settled());
  for (int i = 0; i < kSources; ++i) ASSERT_TRUE(done[i]) << "source " << i << " never added";
  ASSERT_TRUE(sum.Finish().ok()) << status.ToString();
  const double tolerance = c.dtype == DataType::kFloat16 ? 1e-2 : 1e-6;
  const std::vector<char>& result = c.in_place ? input : output;
  for (int64_t k = 0; k < kCount; ++k) {
    ASSERT_NEAR(Decode(c.dtype, result, k), Expected(k), tolerance)
        << DataTypeName(c.dtype) << (c.in_place ? " in place" : "") << " k " << k << " lanes "
        << lanes;
  }
}

class StepAccumulatorOrders : public ::testing::TestWithParam<Case> {};

TEST_P(StepAccumulatorOrders, EveryArrivalOrderAndLandingGivesTheDenseResult) {
  std::vector<int> order = {0, 1, 2, 3};
  std::mt19937 rng(7);
  do {
    for (int lanes = 0; lanes < (1 << kSources); ++lanes) {
      for (int repeat = 0; repeat < 4; ++repeat) RunOnce(GetParam(), order, lanes, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  } while (std::next_permutation(order.begin(), order.end()));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, StepAccumulatorOrders,
                         ::testing::Values(Case{DataType::kFloat64, false},
                                           Case{DataType::kFloat32, false},
                                           Case{DataType::kFloat16, false},
                                           Case{DataType::kFloat64, true}));

TEST(StepAccumulator, TheFirstFullLaneLandsInTheSumItselfOnlyWhileItIsEmpty) {
  BufferPool pool;
  const ExchangeStep spec = Spec();
  std::vector<double> in(kCount, 1.0), out(kCount, 0.0);
  Status status;
  StepAccumulator sum;
  sum.Begin(pool, spec, DataType::kFloat64, reinterpret_cast<char*>(out.data()),
            reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(in.data()), &status);
  for (int i = 0; i < kSources; ++i) sum.Announce(i, kScales[i], kCount * 8);
  EXPECT_EQ(sum.TakeAccumulatorFor(2), nullptr);  // weight 0: nothing to land
  EXPECT_EQ(sum.TakeAccumulatorFor(3), nullptr);  // covers part of the target only
  EXPECT_EQ(sum.TakeAccumulatorFor(0), static_cast<void*>(out.data()));
  EXPECT_EQ(sum.TakeAccumulatorFor(1), nullptr);  // the sum already has its lane
  EXPECT_FALSE(sum.AddInline(1, in.data()));      // waits for that lane, copied
  EXPECT_FALSE(sum.settled());
}

}  // namespace
}  // namespace flock
