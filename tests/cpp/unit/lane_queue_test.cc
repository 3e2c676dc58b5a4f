// LaneQueue: the newest lane first within a per-peer byte budget, at least one
// lane in flight, peers independent, and a lane that waited too long first.
#include "flock/neighbor/lane_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace flock {
namespace {

using Clock = LaneQueue::Clock;
constexpr int64_t kMiB = 1 << 20;

std::vector<uint64_t> Ids(const std::vector<LaneQueue::Lane>& lanes) {
  std::vector<uint64_t> ids;
  for (const auto& lane : lanes) ids.push_back(lane.id);
  return ids;
}

TEST(LaneQueue, NewestFirstWithinTheBudget) {
  LaneQueue queue(4 * kMiB, std::chrono::seconds(5));
  const auto now = Clock::now();
  for (uint64_t id = 0; id < 5; ++id) queue.Push({1, 2 * kMiB, id}, now);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{4, 3}));
  EXPECT_EQ(queue.in_flight(1), 4 * kMiB);
  EXPECT_TRUE(queue.TakeStartable(now).empty());
  queue.Push({1, 2 * kMiB, 5}, now);  // newer than the rest: next in line
  queue.Sent(1, 2 * kMiB);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{5}));
  queue.Sent(1, 2 * kMiB);
  queue.Sent(1, 2 * kMiB);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{2, 1}));
  EXPECT_FALSE(queue.empty());
}

TEST(LaneQueue, ALaneLargerThanTheBudgetStartsAlone) {
  LaneQueue queue(4 * kMiB, std::chrono::seconds(5));
  const auto now = Clock::now();
  queue.Push({2, 1 * kMiB, 0}, now);
  queue.Push({2, 9 * kMiB, 1}, now);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{1}));
  EXPECT_TRUE(queue.TakeStartable(now).empty());
  queue.Sent(2, 9 * kMiB);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{0}));
  EXPECT_TRUE(queue.empty());
}

TEST(LaneQueue, PeersHaveBudgetsOfTheirOwn) {
  LaneQueue queue(1 * kMiB, std::chrono::seconds(5));
  const auto now = Clock::now();
  queue.Push({1, kMiB, 0}, now);
  queue.Push({1, kMiB, 1}, now);
  queue.Push({3, kMiB, 2}, now);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{1, 2}));
  queue.Sent(3, kMiB);  // the other peer's end frees nothing for peer 1
  EXPECT_TRUE(queue.TakeStartable(now).empty());
  queue.Sent(1, kMiB);
  EXPECT_EQ(Ids(queue.TakeStartable(now)), (std::vector<uint64_t>{0}));
}

TEST(LaneQueue, ALaneThatWaitedTooLongGoesFirst) {
  LaneQueue queue(kMiB, std::chrono::milliseconds(100));
  const auto start = Clock::now();
  queue.Push({1, kMiB, 0}, start);
  queue.Push({1, kMiB, 1}, start);
  EXPECT_EQ(Ids(queue.TakeStartable(start)), (std::vector<uint64_t>{1}));
  queue.Push({1, kMiB, 2}, start + std::chrono::milliseconds(150));
  queue.Sent(1, kMiB);
  // Lane 0 has waited 150 ms: it goes before the newer lane 2.
  EXPECT_EQ(Ids(queue.TakeStartable(start + std::chrono::milliseconds(150))),
            (std::vector<uint64_t>{0}));
}

TEST(LaneQueue, NoBudgetStartsEverythingInOrderOfTheNewest) {
  LaneQueue queue(0, std::chrono::seconds(5));
  const auto now = Clock::now();
  for (uint64_t id = 0; id < 3; ++id) queue.Push({1, 64 * kMiB, id}, now);
  EXPECT_EQ(queue.TakeStartable(now).size(), 3u);
  queue.Clear();
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace flock
