#include "engine/handle_table.h"

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

void HandleTable::Complete(HandleId id, Status status, std::shared_ptr<GatheredTensor> gathered) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.done) return;
    it->second.done = true;
    it->second.completion.status = std::move(status);
    it->second.completion.gathered = std::move(gathered);
  }
  done_cv_.notify_all();
}

void HandleTable::CompleteAll(const std::vector<HandleId>& ids, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (HandleId id : ids) {
      auto it = entries_.find(id);
      if (it == entries_.end() || it->second.done) continue;
      it->second.done = true;
      it->second.completion.status = status;
    }
  }
  done_cv_.notify_all();
}

void HandleTable::FailAllPending(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, entry] : entries_) {
      if (entry.done) continue;
      entry.done = true;
      entry.completion.status = status;
    }
  }
  done_cv_.notify_all();
}

Result<bool> HandleTable::IsDone(HandleId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Unknown(id);
  return it->second.done;
}

Result<Completion> HandleTable::Wait(HandleId id, std::chrono::milliseconds poll_interval,
                                     const std::function<Status()>& interrupted) {
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
    if (!listener_told && on_wait_) {
      // Only a wait that will block tells the engine (which then stops
      // batching); collecting a finished handle must not wake it.
      listener_told = true;
      lock.unlock();
      on_wait_();
      lock.lock();
      continue;
    }
    done_cv_.wait_for(lock, poll_interval);
    if (interrupted) {
      lock.unlock();
      Status status = interrupted();
      if (!status.ok()) return status;
      lock.lock();
    }
  }
}

size_t HandleTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace flock
