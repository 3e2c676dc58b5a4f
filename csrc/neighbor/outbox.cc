#include "flock/neighbor/outbox.h"

#include <algorithm>
#include <utility>

namespace flock {

Outbox::Outbox(int64_t message_limit_bytes, double cycle_time_ms)
    : message_limit_bytes_(message_limit_bytes),
      cycle_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(cycle_time_ms))) {}

void Outbox::Queue(int peer, Outbound outbound, Clock::time_point now) {
  if (queued_.empty()) first_ = now;
  last_ = now;
  queued_[peer].push_back(std::move(outbound));
}

Outbox::Clock::time_point Outbox::deadline() const {
  return std::min(last_ + cycle_, first_ + 10 * cycle_);
}

bool Outbox::Due(bool force, Clock::time_point now) const {
  if (queued_.empty()) return false;
  return force || urgent_ || now >= deadline();
}

std::vector<OutboxMessage> Outbox::Take(const std::function<bool(int, const Outbound&)>& keep) {
  urgent_ = false;
  std::map<int, std::vector<Outbound>> queued;
  queued.swap(queued_);
  std::vector<OutboxMessage> messages;
  for (auto& [peer, outbounds] : queued) {
    std::vector<Outbound> live;
    live.reserve(outbounds.size());
    for (Outbound& ob : outbounds) {
      if (!keep(peer, ob)) continue;
      NeighborEntry& e = ob.entry;
      if (e.type == NeighborEntryType::kData && e.lane_tag >= 0)
        e.lane_tag = kLaneTagBase + static_cast<int>(lane_counters_[peer]++ % kLaneTagRange);
      live.push_back(std::move(ob));
    }
    Split(peer, live, messages);
  }
  return messages;
}

void Outbox::Split(int peer, std::vector<Outbound>& live,
                   std::vector<OutboxMessage>& messages) const {
  size_t begin = 0;
  while (begin < live.size()) {
    OutboxMessage message;
    message.peer = peer;
    int64_t inline_bytes = 0;
    size_t end = begin;
    for (; end < live.size(); ++end) {
      const NeighborEntry& e = live[end].entry;
      const bool inline_data = e.type == NeighborEntryType::kData && e.lane_tag < 0;
      const int64_t add = inline_data ? e.payload_bytes : 0;
      // A message holds at least one entry, however large.
      if (end > begin && inline_bytes + add > message_limit_bytes_) break;
      inline_bytes += add;
    }
    message.entries.reserve(end - begin);
    message.sources.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      message.entries.push_back(std::move(live[i].entry));
      message.sources.push_back(std::move(live[i]));
    }
    messages.push_back(std::move(message));
    begin = end;
  }
}

}  // namespace flock
