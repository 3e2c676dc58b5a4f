// HandleTable: what a user thread holds while the engine works on its request.
//
// Submitting creates a pending handle that also keeps the request's tensors
// alive (an opaque keep-alive owned by the caller's framework). The engine's
// loop completes it with a Status (and, for allgather, the gathered tensor) —
// on the engine thread, or on a waiting thread that drives the loop.
// Waiting removes the entry and hands everything back — keep-alive included —
// so the framework objects are released on the user's thread, never on the
// engine's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "flock/common/parker.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/requests/pending_request.h"
#include "flock/transport/gpu_backend.h"

namespace flock {

struct Completion {
  Status status;
  std::shared_ptr<GatheredTensor> gathered;
  std::shared_ptr<void> keep_alive;
  // CUDA ops: the point of flock's stream where the outputs are ready (the
  // handle completes once the work is queued; see transport/gpu_backend.h).
  GpuEventPtr done;
};

class HandleTable {
 public:
  // With `hold_wakes`, Complete and CompleteAll leave the waiting threads
  // asleep until WakeHeld: the engine's loop wakes them once it has let go of
  // the loop, so a woken caller that takes its core finds the loop free to
  // drive instead of held by a thread it has just preempted.
  explicit HandleTable(bool hold_wakes = false) : hold_wakes_(hold_wakes) {}

  HandleId Create(std::shared_ptr<void> keep_alive);
  void Complete(HandleId id, Status status, std::shared_ptr<GatheredTensor> gathered = nullptr,
                GpuEventPtr done = nullptr);
  // Completes a fused batch at once: one lock and one wake-up for all of them,
  // so a thread waiting on them one by one is not woken once per handle.
  void CompleteAll(const std::vector<HandleId>& ids, const Status& status,
                   const GpuEventPtr& done = nullptr);
  // Completes every pending handle with `status` (shutdown), waking at once.
  void FailAllPending(const Status& status);
  // Wakes the threads whose handles completed since the last call (hold_wakes).
  void WakeHeld();
  bool has_held_wakes() const { return has_held_.load(std::memory_order_acquire); }

  // Unknown handles (never created, or already waited for) are an error.
  Result<bool> IsDone(HandleId id) const;
  // Blocks until done; `interrupted` is polled every `poll_interval` and may
  // end the wait early with its own error (used for Ctrl-C).
  Result<Completion> Wait(HandleId id, std::chrono::milliseconds poll_interval,
                          const std::function<Status()>& interrupted);
  // Called whenever a thread starts waiting (the engine stops batching).
  void SetWaitListener(std::function<void()> listener) { on_wait_ = std::move(listener); }
  // True while some thread is blocked in Wait on an unfinished handle (no
  // longer once the handle is done, even before the thread has woken up).
  bool has_blocked_waiter() const { return blocked_waiters_.load(std::memory_order_relaxed) > 0; }

  size_t size() const;

 private:
  // A thread blocked in Wait (one per thread, reused).
  struct Waiter {
    Parker parker;
    bool counted = false;  // in blocked_waiters_ (guarded by mutex_)
  };
  using Waiters = std::vector<std::shared_ptr<Waiter>>;
  struct Entry {
    bool done = false;
    Completion completion;
    Waiters waiters;  // threads blocked in Wait on it
  };
  // Marks the entry done and moves its waiters to `wake`, which no longer
  // count as blocked (caller holds mutex_).
  void MarkDone(Entry& entry, Waiters& wake);
  void Uncount(Waiter& waiter);
  static void WakeAll(const Waiters& wake);
  // With hold_wakes_, moves `wake` to held_ for WakeHeld (caller holds mutex_).
  void HoldIfAsked(Waiters& wake);

  mutable std::mutex mutex_;
  std::unordered_map<HandleId, Entry> entries_;
  HandleId next_id_ = 1;
  std::function<void()> on_wait_;
  std::atomic<int> blocked_waiters_{0};
  const bool hold_wakes_;
  Waiters held_;  // guarded by mutex_
  std::atomic<bool> has_held_{false};
};

}  // namespace flock
