// Outbox: the entries waiting to go to each peer, and how they leave (pure:
// no transport). Every entry for a peer leaves in one control message when
// the outbox is flushed — once a thread waits, a cycle after the last entry
// was queued (at most ten cycles after the first), or at once when a reject
// waits — split into several messages only past the inline byte limit. A
// data entry too large to travel inline gets the next lane tag of its peer,
// cycling through a range every MPI implementation accepts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "flock/neighbor/neighbor_wire.h"

namespace flock {

// An entry and, for data, the step it belongs to (its key and its index in
// the step's sends), so that the sender can be told it left.
struct Outbound {
  NeighborEntry entry;
  std::string step_key;
  int out_index = -1;
};

// One control message to one peer; entries[i] came from sources[i].
struct OutboxMessage {
  int peer = -1;
  std::vector<NeighborEntry> entries;
  std::vector<Outbound> sources;  // their entries moved to `entries`
};

// Take's messages: a view of the outbox's own, valid until the next Take.
struct OutboxMessages {
  OutboxMessage* first = nullptr;
  size_t count = 0;
  OutboxMessage* begin() const { return first; }
  OutboxMessage* end() const { return first + count; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  OutboxMessage& operator[](size_t i) const { return first[i]; }
};

class Outbox {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kLaneTagBase = 100;
  static constexpr int kLaneTagRange = 30000;  // tags stay below 32767 (MPI's least upper bound)

  Outbox(int64_t message_limit_bytes, double cycle_time_ms);

  void Queue(int peer, Outbound outbound, Clock::time_point now);
  void MarkUrgent() { urgent_ = true; }
  bool empty() const { return queued_count_ == 0; }
  // When the queued entries are due to leave without a thread waiting.
  Clock::time_point deadline() const;
  bool Due(bool force, Clock::time_point now) const;

  // Takes every queued entry that `keep(peer, outbound)` accepts (unsent
  // ones are dropped), as messages in peer order, entries in queue order.
  // The messages are the outbox's own, valid until the next Take: their
  // buffers are reused, so a flush allocates nothing once warm.
  OutboxMessages Take(const std::function<bool(int, const Outbound&)>& keep);

 private:
  void Split(int peer);
  OutboxMessage& NextMessage(int peer);

  const int64_t message_limit_bytes_;
  const Clock::duration cycle_;
  // Per peer that ever had entries (a world's worth at most), emptied by Take.
  std::map<int, std::vector<Outbound>> queued_;
  size_t queued_count_ = 0;
  std::vector<Outbound> live_;           // Take's scratch: one peer's kept entries
  std::vector<OutboxMessage> messages_;  // Take's results (the first messages_used_)
  size_t messages_used_ = 0;
  Clock::time_point first_, last_;
  bool urgent_ = false;
  std::unordered_map<int, int64_t> lane_counters_;  // lanes sent to each peer
};

}  // namespace flock
