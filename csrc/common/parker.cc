#include "flock/common/parker.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

namespace flock {

#ifdef __linux__
namespace {
void FutexWait(std::atomic<int32_t>* word, int32_t expected, std::chrono::nanoseconds timeout) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  struct timespec relative;
  relative.tv_sec = static_cast<time_t>(seconds.count());
  relative.tv_nsec = static_cast<long>((timeout - seconds).count());
  // EINTR, EAGAIN (the word already changed) and ETIMEDOUT all mean "look again".
  syscall(SYS_futex, reinterpret_cast<int32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &relative,
          nullptr, 0);
}

void FutexWakeOne(std::atomic<int32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<int32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}
}  // namespace

static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t), "futex word must be 32 bits");

bool Parker::Unpark() {
  if (state_.exchange(kNotified, std::memory_order_release) != kParked) return false;
  FutexWakeOne(&state_);
  return true;
}

void Parker::ParkFor(std::chrono::nanoseconds timeout) {
  // kNotified -> kEmpty: a pending Unpark, consumed. kEmpty -> kParked: sleep.
  if (state_.fetch_sub(1, std::memory_order_acquire) == kNotified) return;
  if (timeout.count() > 0) FutexWait(&state_, kParked, timeout);
  // Awake, for whatever reason: consume an Unpark that came meanwhile.
  state_.exchange(kEmpty, std::memory_order_acquire);
}
#else
bool Parker::Unpark() {
  bool was_parked = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    was_parked = state_.exchange(kNotified, std::memory_order_relaxed) == kParked;
  }
  cv_.notify_one();
  return was_parked;
}

void Parker::ParkFor(std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (state_.load(std::memory_order_relaxed) != kNotified) {
    state_.store(kParked, std::memory_order_relaxed);
    cv_.wait_for(lock, timeout,
                 [this] { return state_.load(std::memory_order_relaxed) == kNotified; });
  }
  state_.store(kEmpty, std::memory_order_relaxed);
}
#endif

}  // namespace flock
