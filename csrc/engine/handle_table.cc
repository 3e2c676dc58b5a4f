#include "engine/handle_table.h"

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
  for (auto& waiter : entry.waiters) wake.push_back(std::move(waiter));
  entry.waiters.clear();
}

void HandleTable::WakeAll(const Waiters& wake) {
  for (const auto& waiter : wake) waiter->Unpark();
}

void HandleTable::Complete(HandleId id, Status status, std::shared_ptr<GatheredTensor> gathered) {
  Waiters wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.done) return;
    it->second.completion.status = std::move(status);
    it->second.completion.gathered = std::move(gathered);
    MarkDone(it->second, wake);
  }
  WakeAll(wake);
}

void HandleTable::CompleteAll(const std::vector<HandleId>& ids, const Status& status) {
  Waiters wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (HandleId id : ids) {
      auto it = entries_.find(id);
      if (it == entries_.end() || it->second.done) continue;
      it->second.completion.status = status;
      MarkDone(it->second, wake);
    }
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
  // One parker per waiting thread, shared with the entries it waits on so a
  // late wake-up never touches a thread that is gone.
  thread_local const std::shared_ptr<Parker> parker = std::make_shared<Parker>();
  // Counted from the listener call on, until this function returns.
  struct BlockedWaiter {
    std::atomic<int>* count = nullptr;
    ~BlockedWaiter() {
      if (count) count->fetch_sub(1, std::memory_order_relaxed);
    }
  } blocked;
  std::unique_lock<std::mutex> lock(mutex_);
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
      blocked.count = &blocked_waiters_;
      blocked_waiters_.fetch_add(1, std::memory_order_relaxed);
      if (on_wait_) {
        lock.unlock();
        on_wait_();
        lock.lock();
        continue;
      }
    }
    Waiters& waiters = it->second.waiters;
    if (std::find(waiters.begin(), waiters.end(), parker) == waiters.end())
      waiters.push_back(parker);
    lock.unlock();
    parker->ParkFor(poll_interval);
    if (interrupted) {
      Status status = interrupted();
      if (!status.ok()) {
        lock.lock();
        auto left = entries_.find(id);
        if (left != entries_.end()) {
          Waiters& w = left->second.waiters;
          w.erase(std::remove(w.begin(), w.end(), parker), w.end());
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
