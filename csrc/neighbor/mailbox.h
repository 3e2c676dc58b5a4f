// Mailbox: entries that arrived for a neighbour step this rank has not
// started yet, and which steps this rank is done with, so that an arrival is
// either kept for its step or recognised as stale (its call ended without it).
//
// A step is met by its key: the step's match name and the call number (seq).
// Steps of one name are not done in call order: a hierarchical call's later
// step waits for its earlier ones, so call 7 can finish '/local-gather' while
// call 6 still waits in '/machines'. "Done" is therefore kept per step — a
// watermark below which every call is done, plus the done calls above it —
// never as the highest call number seen, which would take call 6's data, sent
// before call 6 got there, for stale.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "flock/neighbor/neighbor_wire.h"

namespace flock {

// One entry from a peer, with the message bytes its inline payload points into.
struct Arrival {
  int from = 0;
  NeighborEntry entry;
  std::shared_ptr<const std::vector<char>> bytes;
};

// The key of step (name, seq): one string, as steps are looked up by it.
std::string StepKey(const std::string& name, int64_t seq);

class Mailbox {
 public:
  // Has this rank finished step (name, seq), or will it never run it?
  bool Done(const std::string& name, int64_t seq) const;
  void MarkDone(const std::string& name, int64_t seq);

  // Keeps an early arrival until its step starts.
  void Keep(const std::string& name, int64_t seq, Arrival arrival);
  // What was kept for step (name, seq), oldest first; nothing kept stays.
  std::vector<Arrival> Take(const std::string& name, int64_t seq);
  // Everything kept, for every step (this rank leaves).
  std::vector<Arrival> TakeAll();

  size_t kept_steps() const { return kept_.size(); }
  // Calls above a name's watermark marked done: stays small when calls end.
  size_t done_above_watermark(const std::string& name) const;

 private:
  struct DoneCalls {
    int64_t below = 0;        // every call < below is done
    std::set<int64_t> above;  // done calls >= below
  };
  std::unordered_map<std::string, DoneCalls> done_;
  std::unordered_map<std::string, std::vector<Arrival>> kept_;  // by StepKey
};

}  // namespace flock
