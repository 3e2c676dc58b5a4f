#include "flock/window/edge_locks.h"

#include <algorithm>

namespace flock {

bool EdgeLocks::LockLocal(const std::vector<int>& slots) {
  std::vector<int> ordered = slots;
  std::sort(ordered.begin(), ordered.end());
  ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  for (size_t i = 0; i < ordered.size(); ++i) {
    Slot& slot = slots_[ordered[i]];
    Waiter me;
    me.ticket = ticket;
    if (!slot.held && slot.queue.empty()) {
      slot.held = true;
      slot.holder = me;
      continue;
    }
    slot.queue.push_back(me);
    changed_.wait(lock, [&] { return freed_ || LocalHolds(slot, ticket); });
    if (freed_) return false;
  }
  return !freed_;
}

void EdgeLocks::UnlockLocal(const std::vector<int>& slots) {
  bool granted = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int s : slots) {
      auto it = slots_.find(s);
      if (it == slots_.end() || !it->second.held || it->second.holder.rank != -1) continue;
      const size_t before = grants_.size();
      HandOver(s, it->second);
      granted = granted || grants_.size() > before;
    }
  }
  changed_.notify_all();
  if (granted && notify_) notify_();
}

bool EdgeLocks::LockRemote(int slot_index, int rank, int64_t op, Purpose purpose) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = slots_[slot_index];
  Waiter waiter;
  waiter.rank = rank;
  waiter.op = op;
  waiter.purpose = purpose;
  if (freed_ || (!slot.held && slot.queue.empty())) {
    slot.held = !freed_;
    slot.holder = waiter;
    return true;
  }
  slot.queue.push_back(waiter);
  return false;
}

void EdgeLocks::UnlockRemote(int slot_index, int rank) {
  bool granted = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = slots_.find(slot_index);
    if (it == slots_.end() || !it->second.held || it->second.holder.rank != rank) return;
    const size_t before = grants_.size();
    HandOver(slot_index, it->second);
    granted = grants_.size() > before;
  }
  changed_.notify_all();
  if (granted && notify_) notify_();
}

void EdgeLocks::HandOver(int slot_index, Slot& slot) {
  slot.held = false;
  if (slot.queue.empty()) return;
  slot.holder = slot.queue.front();
  slot.queue.pop_front();
  slot.held = true;
  const Waiter& next = slot.holder;
  if (next.rank >= 0) grants_.push_back({slot_index, next.rank, next.op, next.purpose});
}

std::vector<EdgeLocks::Grant> EdgeLocks::TakeGrants() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Grant> taken;
  taken.swap(grants_);
  return taken;
}

void EdgeLocks::ReleaseAll() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    freed_ = true;
    slots_.clear();
    grants_.clear();
  }
  changed_.notify_all();
}

}  // namespace flock
