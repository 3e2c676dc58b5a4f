// A hierarchical call that fails on one machine fails on every machine, and
// says which rank failed (ranks played by threads, machines {0, 1} and {2, 3}).
// Before, a rank whose local step failed still ran its machine step with the
// incomplete machine mean, and ranks on the other machine returned it as a
// good result: uninitialized memory, with no error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "../support/engine_requests.h"
#include "../support/engines_on_threads.h"
#include "flock/engine/engine.h"
#include "flock/neighbor/op_steps.h"

namespace flock {
namespace {

using testing::Plan;
using testing::WaitFor;

constexpr int kLocalSize = 2;
constexpr int kSize = 4;

HandleId SubmitHierarchical(Engine& engine, int rank, std::vector<double>& in,
                            std::vector<double>& out) {
  const int64_t count = static_cast<int64_t>(in.size());
  const int other = 1 - rank / kLocalSize;
  OpRequest op = MakeRequest(OpKind::kHierarchicalNeighborAllreduce, "h",
                             TensorView{in.data(), DataType::kFloat64, {count}});
  op.steps = std::make_shared<const std::vector<ExchangeStep>>(
      HierarchicalSteps(Plan(0.5, {{other, 0.5}}, {other}), count, kLocalSize, rank % kLocalSize,
                        rank / kLocalSize, true));
  auto handle =
      engine.Submit(std::move(op), TensorView{out.data(), DataType::kFloat64, {count}}, nullptr);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? handle.value() : -1;
}

Config StallConfig(double shutdown_s) {
  Config config;
  config.cycle_time_ms = 1.0;
  config.stall_shutdown_s = shutdown_s;
  return config;
}

TEST(NeighborFailedCall, AMismatchOnOneMachineFailsTheOtherMachineToo) {
  // Rank 3 calls with another length: the local step of machine 1 fails (a
  // mismatch, at once), so machine 1 has no mean to give machine 0.
  testing::OnRanks(kSize, StallConfig(30), [&](int rank, Engine& engine) {
    std::vector<double> in(rank == 3 ? 8 : 6, rank), out(in.size(), -1);
    const Status status = WaitFor(engine, SubmitHierarchical(engine, rank, in, out));
    EXPECT_FALSE(status.ok()) << "rank " << rank << " got " << out[0];
    if (rank < kLocalSize) {
      EXPECT_NE(status.message().find("dropped out of this call after an earlier step failed"),
                std::string::npos)
          << status.message();
    }
  });
}

TEST(NeighborFailedCall, EveryRankNamesTheRankThatNeverCalled) {
  // Rank 3 never calls: rank 2 stalls in the local step, ranks 1 and 0 in the
  // machine step (0 waits for 2, which waits for 3). Every error names rank 3,
  // within the limit and its grace per later step, not twice the limit.
  std::atomic<int> done{0};
  testing::OnRanks(kSize, StallConfig(0.5), [&](int rank, Engine& engine) {
    if (rank == 3) {
      while (done.load() < kSize - 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    std::vector<double> in(6, rank), out(6, -1);
    const auto start = std::chrono::steady_clock::now();
    const Status status = WaitFor(engine, SubmitHierarchical(engine, rank, in, out));
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++done;
    EXPECT_EQ(status.code(), StatusCode::kAborted) << "rank " << rank;
    EXPECT_NE(status.message().find("waiting for ranks [3]"), std::string::npos)
        << "rank " << rank << ": " << status.message();
    EXPECT_LT(waited, 2.0) << "rank " << rank;
  });
}

}  // namespace
}  // namespace flock
