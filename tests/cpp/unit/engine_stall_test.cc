// Hangs become errors on time (FLOCK_STALL_SHUTDOWN_S), with ranks played by
// threads: a name some ranks never submit fails after the shutdown period
// whatever the warning period, and ranks whose coordinator (rank 0) stopped
// answering fail their global ops and still shut down.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "../support/engine_requests.h"
#include "../support/engines_on_threads.h"
#include "../support/faulty_transport.h"
#include "flock/engine/engine.h"

namespace flock {
namespace {

using testing::SubmitAllreduce;
using testing::WaitFor;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Config StallConfig(double shutdown_s) {
  Config config;
  config.cycle_time_ms = 2.0;
  config.stall_warning_s = 60.0;  // the default: must not delay the shutdown
  config.stall_shutdown_s = shutdown_s;
  return config;
}

TEST(EngineStall, AMissingRankFailsTheOpAfterTheShutdownPeriodNotTheWarningPeriod) {
  const int size = 3;
  std::atomic<int> failed{0};
  testing::OnRanks(size, StallConfig(1.0), [&](int rank, Engine& engine) {
    std::vector<float> data(4, 1.0f);
    if (rank != 2) {  // rank 2 never submits "late"
      const auto start = std::chrono::steady_clock::now();
      Status status = WaitFor(engine, SubmitAllreduce(engine, "late", data, DataType::kFloat32));
      EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
      EXPECT_NE(status.message().find("ranks 2 never submitted it"), std::string::npos)
          << status.message();
      const double waited = SecondsSince(start);
      EXPECT_GE(waited, 0.9);
      EXPECT_LT(waited, 2.5) << "FLOCK_STALL_SHUTDOWN_S=1 should fail it within a second";
      ++failed;
    } else {
      // Rank 2 waits for the others' failure: an "after" it submitted meanwhile
      // would itself stall for a second, and fail.
      while (failed.load() < size - 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The engine still works afterwards, on every rank.
    std::vector<float> after(2, 1.0f);
    ASSERT_TRUE(WaitFor(engine, SubmitAllreduce(engine, "after", after, DataType::kFloat32)).ok());
    EXPECT_EQ(after[0], static_cast<float>(size));
  });
}

// Ranks 1 and 2 run engines; rank 0 (the coordinator) never does, as if stopped.
// Their shutdown cannot complete without it (MPI_Finalize would wait): it ends
// the job after FLOCK_STALL_SHUTDOWN_S (not at once: other survivors' ops still
// waiting for rank 0 fail meanwhile, and their ranks learn why).
TEST(EngineStall, RanksWhoseCoordinatorIsSilentFailTheirGlobalOpsAndEndTheJob) {
  testing::ThreadWorld world(3);
  std::vector<std::thread> threads;
  for (int rank = 1; rank < 3; ++rank) {
    threads.emplace_back([&world, rank] {
      testing::FaultyTransport transport(world, rank, {});
      Engine engine(transport, StallConfig(1.0));
      ASSERT_TRUE(engine.Start().ok());
      std::vector<float> data(4, 1.0f);
      const auto start = std::chrono::steady_clock::now();
      Status status = WaitFor(engine, SubmitAllreduce(engine, "waits", data, DataType::kFloat32));
      EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
      EXPECT_NE(status.message().find("no answer from rank 0"), std::string::npos)
          << status.message();
      EXPECT_LT(SecondsSince(start), 4.0);
      // Later global ops fail at once, with the same reason.
      Status later = WaitFor(engine, SubmitAllreduce(engine, "later", data, DataType::kFloat32));
      EXPECT_NE(later.message().find("no answer from rank 0"), std::string::npos);
      const auto stop = std::chrono::steady_clock::now();
      EXPECT_FALSE(transport.aborted());
      engine.Shutdown();  // no final answer will come: it waits only the limit
      EXPECT_GT(SecondsSince(stop), 0.9);
      EXPECT_LT(SecondsSince(stop), 2.0);
      EXPECT_TRUE(transport.aborted());
    });
  }
  for (auto& t : threads) t.join();
}

// Rank 1 never runs (as if stopped). Rank 0 saw it stall, so its shutdown
// waits for it only FLOCK_STALL_SHUTDOWN_S, then ends the job.
TEST(EngineStall, AShutdownAfterAStallEndsTheJobAfterTheLimit) {
  testing::ThreadWorld world(2);
  testing::FaultyTransport transport(world, 0, {});
  Engine engine(transport, StallConfig(1.0));
  ASSERT_TRUE(engine.Start().ok());
  std::vector<float> data(4, 1.0f);
  Status status = WaitFor(engine, SubmitAllreduce(engine, "stalls", data, DataType::kFloat32));
  EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
  const auto stop = std::chrono::steady_clock::now();
  engine.Shutdown();
  EXPECT_TRUE(transport.aborted());
  EXPECT_GT(SecondsSince(stop), 0.9);
  EXPECT_LT(SecondsSince(stop), 2.0);
}

// Without a stall, a rank's late shutdown is awaited past the limit: the ranks'
// work may differ in length, and a healthy job must end normally.
TEST(EngineStall, ALateShutdownWithoutAStallIsAwaited) {
  testing::ThreadWorld world(2);
  std::vector<std::thread> threads;
  std::atomic<bool> aborted{false};
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&world, &aborted, rank] {
      testing::FaultyTransport transport(world, rank, {});
      Engine engine(transport, StallConfig(1.0));
      ASSERT_TRUE(engine.Start().ok());
      std::vector<float> data(4, 1.0f);
      ASSERT_TRUE(WaitFor(engine, SubmitAllreduce(engine, "x", data, DataType::kFloat32)).ok());
      if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      engine.Shutdown();
      if (transport.aborted()) aborted = true;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(aborted);
}

// After a stall, a rank that never stalled is still awaited, however late:
// rank 2 misses "x" (so it stalls) and shuts down at 1.5 s; rank 1 computes on
// and shuts down at 3.5 s, past the 1 s limit. The job ends normally.
TEST(EngineStall, AfterAStallAHealthyRanksLateShutdownIsAwaited) {
  testing::ThreadWorld world(3);
  std::vector<std::thread> threads;
  std::atomic<bool> aborted{false};
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&world, &aborted, rank] {
      testing::FaultyTransport transport(world, rank, {});
      Engine engine(transport, StallConfig(1.0));
      ASSERT_TRUE(engine.Start().ok());
      std::vector<float> data(4, 1.0f);
      if (rank == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      } else {
        Status status = WaitFor(engine, SubmitAllreduce(engine, "x", data, DataType::kFloat32));
        EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      }
      engine.Shutdown();
      if (transport.aborted()) aborted = true;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(aborted);
}

}  // namespace
}  // namespace flock
