#include "faulty_transport.h"

#include <algorithm>

namespace flock::testing {

const FaultRule* FaultyTransport::Match(int dest, int tag, CommGroup group) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    const FaultRule& rule = rules_[i];
    if (rule.group != group || (rule.dest >= 0 && rule.dest != dest) ||
        (rule.tag >= 0 && rule.tag != tag))
      continue;
    if (seen_[i]++ == rule.nth) return &rule;
  }
  return nullptr;
}

Status FaultyTransport::PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) {
  std::lock_guard<std::mutex> lock(mutex_);
  const FaultRule* rule = Match(dest, tag, group);
  if (rule == nullptr) {
    // MPI does not let a message overtake an earlier one of the same channel:
    // behind a delayed one, it waits too.
    for (const Delayed& d : delayed_) {
      if (d.dest == dest && d.tag == tag && d.group == group) {
        delayed_.push_back({d.due, std::move(bytes), dest, tag, group});
        return Status::OK();
      }
    }
    return inner_.PostSend(std::move(bytes), dest, tag, group);
  }
  switch (rule->fault) {
    case Fault::kDrop: return Status::OK();
    case Fault::kFailSend: return Status::TransportError("injected: the send failed");
    case Fault::kCorrupt:
      // Garbled from the first byte on: sizes and counts read as nonsense.
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5 ^ (i * 31));
      if (bytes.empty()) bytes.assign(3, static_cast<char>(0xFF));
      return inner_.PostSend(std::move(bytes), dest, tag, group);
    case Fault::kDelay: {
      auto due = std::chrono::steady_clock::now() + rule->delay;
      for (const Delayed& d : delayed_) {  // not before an earlier one of its channel
        if (d.dest == dest && d.tag == tag && d.group == group) due = std::max(due, d.due);
      }
      delayed_.push_back({due, std::move(bytes), dest, tag, group});
      return Status::OK();
    }
  }
  return Status::OK();
}

Result<bool> FaultyTransport::ProgressSends() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  // In posting order; a channel's due times never decrease, so its messages
  // leave in the order they were posted.
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->due > now) {
      ++it;
      continue;
    }
    Status s = inner_.PostSend(std::move(it->bytes), it->dest, it->tag, it->group);
    if (!s.ok()) return s;
    it = delayed_.erase(it);
  }
  return delayed_.empty();
}

}  // namespace flock::testing
