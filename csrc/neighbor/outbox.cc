#include "flock/neighbor/outbox.h"

#include <algorithm>
#include <utility>

namespace flock {

Outbox::Outbox(int64_t message_limit_bytes, double cycle_time_ms)
    : message_limit_bytes_(message_limit_bytes),
      cycle_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(cycle_time_ms))) {}

void Outbox::Queue(int peer, Outbound outbound, Clock::time_point now) {
  if (queued_count_++ == 0) first_ = now;
  last_ = now;
  queued_[peer].push_back(std::move(outbound));
}

Outbox::Clock::time_point Outbox::deadline() const {
  return std::min(last_ + cycle_, first_ + 10 * cycle_);
}

bool Outbox::Due(bool force, Clock::time_point now) const {
  if (queued_count_ == 0) return false;
  return force || urgent_ || now >= deadline();
}

OutboxMessages Outbox::Take(const std::function<bool(int, const Outbound&)>& keep) {
  urgent_ = false;
  queued_count_ = 0;
  messages_used_ = 0;
  for (auto& [peer, outbounds] : queued_) {
    if (outbounds.empty()) continue;
    live_.clear();
    for (Outbound& ob : outbounds) {
      if (!keep(peer, ob)) continue;
      NeighborEntry& e = ob.entry;
      if (e.type == NeighborEntryType::kData && e.lane_tag >= 0)
        e.lane_tag = kLaneTagBase + static_cast<int>(lane_counters_[peer]++ % kLaneTagRange);
      live_.push_back(std::move(ob));
    }
    outbounds.clear();  // keeps its capacity for the next flush
    Split(peer);
  }
  return OutboxMessages{messages_.data(), messages_used_};
}

// A reused message: its vectors keep their capacity from earlier flushes.
OutboxMessage& Outbox::NextMessage(int peer) {
  if (messages_used_ == messages_.size()) messages_.emplace_back();
  OutboxMessage& message = messages_[messages_used_++];
  message.peer = peer;
  message.entries.clear();
  message.sources.clear();
  return message;
}

void Outbox::Split(int peer) {
  size_t begin = 0;
  while (begin < live_.size()) {
    int64_t inline_bytes = 0;
    size_t end = begin;
    for (; end < live_.size(); ++end) {
      const NeighborEntry& e = live_[end].entry;
      const bool inline_data = e.type == NeighborEntryType::kData && e.lane_tag < 0;
      const int64_t add = inline_data ? e.payload_bytes : 0;
      // A message holds at least one entry, however large.
      if (end > begin && inline_bytes + add > message_limit_bytes_) break;
      inline_bytes += add;
    }
    OutboxMessage& message = NextMessage(peer);
    for (size_t i = begin; i < end; ++i) {
      message.entries.push_back(std::move(live_[i].entry));
      message.sources.push_back(std::move(live_[i]));
    }
    begin = end;
  }
}

}  // namespace flock
