// How long a shutdown waits for a rank seen stalling: the shutdown message
// that names such ranks, and rank 0's decision (Coordinator::OverdueStalledRanks).
// The engine side (the job ends, or a healthy late rank is awaited) is in
// engine_stall_test.cc.
#include <gtest/gtest.h>

#include <chrono>

#include "flock/engine/coordinator.h"
#include "flock/engine/wire.h"

namespace flock {
namespace {

TEST(ShutdownWire, TheStalledRanksRoundTripAndNoneIsEmpty) {
  EXPECT_TRUE(EncodeShutdown({}).empty());
  auto none = DecodeShutdown({}, 4);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty());
  auto some = DecodeShutdown(EncodeShutdown({3, 0}), 4);
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  EXPECT_EQ(some.value(), (std::vector<int>{3, 0}));
}

TEST(ShutdownWire, RanksOutsideTheWorldAndStrayBytesAreRefused) {
  auto outside = DecodeShutdown(EncodeShutdown({4}), 4);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("rank 4 is not in [0, 4)"), std::string::npos)
      << outside.status().message();
  std::vector<char> stray = EncodeShutdown({1});
  stray.push_back('x');
  EXPECT_FALSE(DecodeShutdown(stray, 4).ok());
  std::vector<char> cut = EncodeShutdown({1, 2});
  cut.pop_back();
  EXPECT_FALSE(DecodeShutdown(cut, 4).ok());
}

using Seconds = std::chrono::duration<double>;

Clock::time_point At(Clock::time_point start, double seconds) {
  return start + std::chrono::duration_cast<Clock::duration>(Seconds(seconds));
}

// Each row: which ranks shut down when (negative: never), which ranks some
// rank saw stall, and what rank 0 finds overdue at time `now` with a 2 s limit.
struct Row {
  const char* what;
  std::vector<double> shut_down_at;
  std::vector<int> stalled;
  double now;
  std::vector<int> overdue;
};

TEST(Coordinator, AStalledRankIsOverdueOnlyOnceEveryOtherRankHasShutDownForTheLimit) {
  const std::vector<Row> rows = {
      {"no stall: a late rank is awaited", {0, 1, -1}, {}, 100, {}},
      {"the stalled rank shut down too", {0, 1, 5}, {2}, 100, {}},
      {"within the limit of the last other shutdown", {0, 1.5, -1}, {2}, 3.4, {}},
      {"past the limit", {0, 1.5, -1}, {2}, 3.5, {2}},
      {"a healthy rank still works", {0, -1, -1}, {2}, 100, {}},
      {"two stalled ranks", {0, -1, -1}, {1, 2}, 2.0, {1, 2}},
      {"any rank: the others decide for a stalled rank 0", {-1, 0, 0}, {0}, 100, {0}},
  };
  for (const Row& row : rows) {
    const int size = static_cast<int>(row.shut_down_at.size());
    Coordinator coordinator(size, 1 << 20);
    const auto start = Clock::now();
    bool reported = false;
    for (int r = 0; r < size; ++r) {
      if (row.shut_down_at[r] < 0) continue;
      // The first rank to shut down reports the stalls it saw.
      coordinator.AddShutdown(r, reported ? std::vector<int>{} : row.stalled,
                              At(start, row.shut_down_at[r]));
      reported = true;
    }
    EXPECT_EQ(coordinator.OverdueStalledRanks(At(start, row.now), 2.0), row.overdue) << row.what;
  }
}

TEST(Coordinator, AFailedStallMarksItsMissingRanksStalled) {
  Coordinator coordinator(2, 1 << 20);
  const auto start = Clock::now();
  Stall stall;
  stall.name = "x";
  stall.missing_ranks = {1};
  coordinator.FailStalled({stall}, "stalled");
  coordinator.AddShutdown(0, {}, start);
  EXPECT_TRUE(coordinator.OverdueStalledRanks(At(start, 1.0), 2.0).empty());
  EXPECT_EQ(coordinator.OverdueStalledRanks(At(start, 2.0), 2.0), std::vector<int>{1});
}

}  // namespace
}  // namespace flock
