#include "flock/engine/handle_table.h"

#include <algorithm>

namespace flock {
namespace {
Status Unknown(HandleId id) {
  return Status::InvalidArgument("unknown handle " + std::to_string(id) +
                                 " (already synchronized, or from before a shutdown)");
}
}  // namespace

HandleId HandleTable::Create(std::shared_ptr<void> keep_alive) {
  std::lock_guard<std::mutex> lock(mutex_);
  const HandleId id = next_id_++;
  entries_[id].completion.keep_alive = std::move(keep_alive);
  return id;
}

void HandleTable::MarkDone(Entry& entry, Waiters& wake) {
  entry.done = true;
  for (auto& waiter : entry.waiters) {
    // Its result is ready: the engine need not keep polling for this thread
    // while it wakes up (on a busy host that can take a while).
    Uncount(*waiter);
    wake.push_back(std::move(waiter));
  }
  entry.waiters.clear();
}

void HandleTable::Uncount(Waiter& waiter) {
  if (!waiter.counted) return;
  waiter.counted = false;
  blocked_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void HandleTable::WakeAll(const Waiters& wake) {
  for (const auto& waiter : wake) waiter->parker.Unpark();
}

void HandleTable::HoldIfAsked(Waiters& wake) {
  if (!hold_wakes_ || wake.empty()) return;
  for (auto& waiter : wake) held_.push_back(std::move(waiter));
  wake.clear();
  has_held_.store(true, std::memory_order_release);
}

void HandleTable::WakeHeld() {
  if (!has_held_.load(std::memory_order_acquire)) return;
  Waiters wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake.swap(held_);
    has_held_.store(false, std::memory_order_relaxed);
  }
  WakeAll(wake);
}

void HandleTable::Complete(HandleId id, Status status, std::shared_ptr<GatheredTensor> gathered,
                           GpuEventPtr done) {
  Waiters wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.done) return;
    it->second.completion.status = std::move(status);
    it->second.completion.gathered = std::move(gathered);
    it->second.completion.done = std::move(done);
    MarkDone(it->second, wake);
    HoldIfAsked(wake);
  }
  WakeAll(wake);
}

void HandleTable::CompleteAll(const std::vector<HandleId>& ids, const Status& status,
                              const GpuEventPtr& done) {
  Waiters wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (HandleId id : ids) {
      auto it = entries_.find(id);
      if (it == entries_.end() || it->second.done) continue;
      it->second.completion.status = status;
      it->second.completion.done = done;
      MarkDone(it->second, wake);
    }
    HoldIfAsked(wake);
  }
  WakeAll(wake);
}

void HandleTable::FailAllPending(const Status& status) {
  Waiters wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, entry] : entries_) {
      if (entry.done) continue;
      entry.completion.status = status;
      MarkDone(entry, wake);
    }
  }
  WakeAll(wake);
}

Result<bool> HandleTable::IsDone(HandleId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Unknown(id);
  return it->second.done;
}

Result<Completion> HandleTable::Wait(HandleId id, std::chrono::milliseconds poll_interval,
                                     const std::function<Status()>& interrupted) {
  // One waiter per thread, shared with the entries it waits on so a late
  // wake-up never touches a thread that is gone.
  thread_local const std::shared_ptr<Waiter> waiter = std::make_shared<Waiter>();
  std::unique_lock<std::mutex> lock(mutex_);
  // Counted as blocked from the listener call on, until the handle is done or
  // this function returns (destroyed before `lock`: with mutex_ held).
  struct Uncounter {
    HandleTable* table;
    Waiter* waiter;
    ~Uncounter() { table->Uncount(*waiter); }
  } uncount{this, waiter.get()};
  bool listener_told = false;
  while (true) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return Unknown(id);
    if (it->second.done) {
      Completion completion = std::move(it->second.completion);
      entries_.erase(it);
      return completion;
    }
    if (!listener_told) {
      // Only a wait that will block counts and tells the engine (which then
      // stops batching); collecting a finished handle must not wake it.
      listener_told = true;
      waiter->counted = true;
      blocked_waiters_.fetch_add(1, std::memory_order_relaxed);
      if (on_wait_) {
        lock.unlock();
        on_wait_();
        lock.lock();
        continue;
      }
    }
    Waiters& waiters = it->second.waiters;
    if (std::find(waiters.begin(), waiters.end(), waiter) == waiters.end())
      waiters.push_back(waiter);
    lock.unlock();
    waiter->parker.ParkFor(poll_interval);
    if (interrupted) {
      Status status = interrupted();
      if (!status.ok()) {
        lock.lock();
        auto left = entries_.find(id);
        if (left != entries_.end()) {
          Waiters& w = left->second.waiters;
          w.erase(std::remove(w.begin(), w.end(), waiter), w.end());
        }
        return status;
      }
    }
    lock.lock();
  }
}

size_t HandleTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace flock
