// Parker: a kept wake-up, timeouts, and no wake-up lost between a check and a park.
#include "flock/common/parker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "../support/eventually.h"

namespace flock {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(Parker, AnUnparkBeforeParkIsKept) {
  Parker parker;
  parker.Unpark();
  const auto start = Clock::now();
  parker.ParkFor(std::chrono::seconds(10));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(Parker, ParkForTimesOutAndConsumesNothing) {
  Parker parker;
  const auto start = Clock::now();
  parker.ParkFor(milliseconds(20));
  EXPECT_GE(Clock::now() - start, milliseconds(15));
  parker.Unpark();
  parker.ParkFor(std::chrono::seconds(10));  // returns at once: the wake-up was kept
  const auto second = Clock::now();
  parker.ParkFor(milliseconds(20));  // and consumed: this one sleeps again
  EXPECT_GE(Clock::now() - second, milliseconds(15));
}

TEST(Parker, ParkUntilAPastDeadlineReturnsAtOnce) {
  Parker parker;
  const auto start = Clock::now();
  parker.ParkUntil(start - milliseconds(1));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// Unparks `parker` from another thread 10 ms after `park` starts; true when
// `park` then returned well before its own (long) timeout.
template <typename Park>
bool WokenByAnotherThread(Parker& parker, Park park) {
  std::thread waker([&] {
    std::this_thread::sleep_for(milliseconds(10));
    parker.Unpark();
  });
  const auto start = Clock::now();
  park();
  const bool woken = Clock::now() - start < std::chrono::seconds(10);
  waker.join();
  return woken;
}

TEST(Parker, ParkUntilTheEndOfTimeWaitsForAnUnpark) {
  Parker parker;
  EXPECT_TRUE(WokenByAnotherThread(parker, [&] { parker.ParkUntil(Clock::time_point::max()); }));
}

TEST(Parker, AnotherThreadWakesASleeper) {
  Parker parker;
  EXPECT_TRUE(WokenByAnotherThread(parker, [&] { parker.ParkFor(std::chrono::seconds(30)); }));
}

TEST(Parker, UnparkSaysWhetherItWokeASleeper) {
  Parker parker;
  EXPECT_FALSE(parker.Unpark());  // nobody parked: kept
  EXPECT_FALSE(parker.Unpark());
  parker.ParkFor(milliseconds(1));  // consumes it
  std::atomic<bool> stop{false};
  std::thread sleeper([&] {
    while (!stop.load()) parker.ParkFor(std::chrono::seconds(1));
  });
  // The sleeper parks again after each Unpark it consumed: one Unpark soon
  // finds it asleep.
  const bool woke = Eventually([&] { return parker.Unpark(); });
  stop.store(true);
  parker.Unpark();
  sleeper.join();
  EXPECT_TRUE(woke);
}

TEST(Parker, NoWakeUpIsLostBetweenCheckAndPark) {
  // Two threads hand a turn back and forth; each checks, then parks with a
  // long timeout. A lost wake-up would stall one hand-off for that timeout.
  Parker parkers[2];
  std::atomic<int> turn{0};
  constexpr int kHandOffs = 20000;
  auto play = [&](int me) {
    for (int i = me; i < kHandOffs; i += 2) {
      while (turn.load(std::memory_order_acquire) != i)
        parkers[me].ParkFor(std::chrono::seconds(20));
      turn.store(i + 1, std::memory_order_release);
      parkers[1 - me].Unpark();
    }
  };
  const auto start = Clock::now();
  std::thread other(play, 1);
  play(0);
  other.join();
  EXPECT_EQ(turn.load(), kHandOffs);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(15));
}

}  // namespace
}  // namespace flock
