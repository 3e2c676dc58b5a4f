// Parker: one thread sleeps until another wakes it.
//
// Why not a condition variable: glibc's pthread_cond_wait re-takes its mutex
// in "contended" mode, so the first unlock after every wake-up is a futex
// system call even when nobody waits. On this project's VM a futex call costs
// ~4.5 us, and the engine and a waiting caller each paid one per op on top of
// the wake-up itself. A parker costs one futex call to sleep, one to wake a
// sleeper, and none when the other thread is awake.
//
// Any thread may Unpark; only the owning thread parks. An Unpark that finds no
// sleeper is kept: the next Park returns at once (so "check, then park" does
// not lose a wake-up between the two). Park may also return early for no
// reason; callers re-check their condition.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#ifndef __linux__
#include <condition_variable>
#include <mutex>
#endif

namespace flock {

class Parker {
 public:
  // True when it woke a parked thread (false: the wake-up is kept for later).
  bool Unpark();
  void ParkFor(std::chrono::nanoseconds timeout);
  template <typename Clock, typename Duration>
  void ParkUntil(std::chrono::time_point<Clock, Duration> deadline) {
    const auto now = Clock::now();
    if (deadline <= now) return;
    // time_point::max() and similar: a day is "until woken" for every caller.
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::min<typename Clock::duration>(deadline - now, std::chrono::hours(24)));
    ParkFor(left);
  }

 private:
  static constexpr int32_t kParked = -1;
  static constexpr int32_t kEmpty = 0;
  static constexpr int32_t kNotified = 1;
  std::atomic<int32_t> state_{kEmpty};
#ifndef __linux__
  std::mutex mutex_;
  std::condition_variable cv_;
#endif
};

}  // namespace flock
