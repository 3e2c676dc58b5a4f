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

class Outbox {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kLaneTagBase = 100;
  static constexpr int kLaneTagRange = 30000;  // tags stay below 32767 (MPI's least upper bound)

  Outbox(int64_t message_limit_bytes, double cycle_time_ms);

  void Queue(int peer, Outbound outbound, Clock::time_point now);
  void MarkUrgent() { urgent_ = true; }
  bool empty() const { return queued_.empty(); }
  // When the queued entries are due to leave without a thread waiting.
  Clock::time_point deadline() const;
  bool Due(bool force, Clock::time_point now) const;

  // Takes every queued entry that `keep(peer, outbound)` accepts (unsent
  // ones are dropped), as messages in peer order, entries in queue order.
  std::vector<OutboxMessage> Take(const std::function<bool(int, const Outbound&)>& keep);

 private:
  void Split(int peer, std::vector<Outbound>& live, std::vector<OutboxMessage>& messages) const;

  const int64_t message_limit_bytes_;
  const Clock::duration cycle_;
  std::map<int, std::vector<Outbound>> queued_;
  Clock::time_point first_, last_;
  bool urgent_ = false;
  std::unordered_map<int, int64_t> lane_counters_;  // lanes sent to each peer
};

}  // namespace flock
