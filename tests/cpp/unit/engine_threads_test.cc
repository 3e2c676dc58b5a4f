// The engine with several ranks played by threads of this process over the
// in-process ThreadTransport: name matching in any order, fusion, errors on
// every rank, shutdown. Runs under ThreadSanitizer (FLOCK_SANITIZE=thread).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <thread>

#include "../support/engine_requests.h"
#include "../support/engines_on_threads.h"
#include "flock/engine/engine.h"

namespace flock {
namespace {

Config TestConfig() {
  Config config;
  config.cycle_time_ms = 2.0;
  return config;
}

// Runs body(rank, engine) on `size` threads, each with its own engine.
void OnRanks(int size, const std::function<void(int, Engine&)>& body,
             Config config = TestConfig()) {
  testing::OnRanks(size, config, body);
}

HandleId SubmitAllreduce(Engine& engine, const std::string& name, std::vector<float>& data) {
  return testing::SubmitAllreduce(engine, name, data, DataType::kFloat32);
}

using testing::WaitFor;

class EngineThreads : public ::testing::TestWithParam<int> {};

TEST_P(EngineThreads, NamesMatchInAnyOrder) {
  const int size = GetParam();
  OnRanks(size, [&](int rank, Engine& engine) {
    std::vector<int> order(50);
    for (int i = 0; i < 50; ++i) order[static_cast<size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(rank + 1));
    std::vector<std::vector<float>> data(50);
    std::vector<HandleId> handles(50);
    for (int i : order) {
      data[static_cast<size_t>(i)].assign(static_cast<size_t>(i + 1), static_cast<float>(rank + i));
      handles[static_cast<size_t>(i)] =
          SubmitAllreduce(engine, "t" + std::to_string(i), data[static_cast<size_t>(i)]);
    }
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(WaitFor(engine, handles[static_cast<size_t>(i)]).ok());
      const float expected = static_cast<float>(size * (size - 1) / 2 + size * i);
      for (float v : data[static_cast<size_t>(i)]) ASSERT_EQ(v, expected);
    }
  });
}

// A cycle boundary may fall amid the submissions (two batches), but the
// 100 submissions of every rank must not span two cycles: at the tests' 2 ms
// cycle a preempted thread did, under ASan on a loaded machine (3 batches).
TEST_P(EngineThreads, SmallTensorsSubmittedTogetherAreFused) {
  Config slow_cycles = TestConfig();
  slow_cycles.cycle_time_ms = 100.0;
  OnRanks(
      GetParam(),
      [&](int, Engine& engine) {
        std::vector<std::vector<float>> data(100, std::vector<float>(1024, 1.0f));  // 4 KB each
        std::vector<HandleId> handles;
        for (int i = 0; i < 100; ++i)
          handles.push_back(
              SubmitAllreduce(engine, "f" + std::to_string(i), data[static_cast<size_t>(i)]));
        for (HandleId h : handles) ASSERT_TRUE(WaitFor(engine, h).ok());
        EXPECT_LE(engine.counters().batches.load(), 2);
        EXPECT_EQ(data[99][0], static_cast<float>(GetParam()));
      },
      slow_cycles);
}

TEST_P(EngineThreads, SecondRoundUsesTheResponseCache) {
  OnRanks(GetParam(), [&](int, Engine& engine) {
    std::vector<float> x(8, 1.0f);
    for (int round = 0; round < 3; ++round)
      ASSERT_TRUE(WaitFor(engine, SubmitAllreduce(engine, "w", x)).ok());
    EXPECT_EQ(engine.counters().cache_hits.load(), 2);
  });
}

TEST_P(EngineThreads, MismatchFailsEveryRankAndTheNextOpWorks) {
  const int size = GetParam();
  if (size < 2) GTEST_SKIP();
  OnRanks(size, [&](int rank, Engine& engine) {
    std::vector<float> x(rank == 1 ? 5 : 4, 1.0f);
    Status status = WaitFor(engine, SubmitAllreduce(engine, "bad", x));
    EXPECT_EQ(status.code(), StatusCode::kMismatch);
    EXPECT_NE(status.message().find("rank 1 has [5]"), std::string::npos) << status.message();
    std::vector<float> y(3, 2.0f);
    ASSERT_TRUE(WaitFor(engine, SubmitAllreduce(engine, "good", y)).ok());
    EXPECT_EQ(y[0], 2.0f * size);
  });
}

TEST_P(EngineThreads, DuplicateNameInFlightIsRefusedAtOnce) {
  OnRanks(GetParam(), [&](int, Engine& engine) {
    std::vector<float> a(2, 1.0f), b(2, 1.0f);
    HandleId first = SubmitAllreduce(engine, "dup", a);
    OpRequest again =
        MakeRequest(OpKind::kAllreduce, "dup", TensorView{b.data(), DataType::kFloat32, {2}});
    auto refused = engine.Submit(again, again.tensor, nullptr);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(WaitFor(engine, first).ok());
  });
}

TEST_P(EngineThreads, ShutdownFailsWhatCanNeverComplete) {
  const int size = GetParam();
  if (size < 2) GTEST_SKIP();
  OnRanks(size, [&](int rank, Engine& engine) {
    if (rank != 0) return;  // only rank 0 submits: its request can never complete
    std::vector<float> x(2, 1.0f);
    HandleId lonely = SubmitAllreduce(engine, "lonely", x);
    engine.Shutdown();  // returns once every rank has shut down
    Status status = WaitFor(engine, lonely);
    EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
    EXPECT_NE(status.message().find("shut down"), std::string::npos);
  });
}

INSTANTIATE_TEST_SUITE_P(Sizes, EngineThreads, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace flock
