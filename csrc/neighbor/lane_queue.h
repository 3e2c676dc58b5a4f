// LaneQueue: in which order the receives of lanes from peers on other hosts
// start (pure: no transport). A lane's bytes cross the link once its receive
// is posted, and lanes posted together share the one connection to the peer,
// so a tensor announced last would wait for all the bytes before it. The
// queue keeps at most a budget of bytes posted per peer (always at least one
// lane) and starts the newest lane first: the optimizers launch a backward
// pass's gradients or parameters from the last layer to the first, and the
// next forward pass needs them from the first layer on, so the newest is the
// one needed soonest (the overlap of adapt-then-combine with the next forward
// pass depends on it). A lane queued longer than `max_wait` goes first,
// oldest first, so a steady stream of newer lanes cannot starve it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

namespace flock {

class LaneQueue {
 public:
  using Clock = std::chrono::steady_clock;

  struct Lane {
    int peer = -1;
    int64_t bytes = 0;
    uint64_t id = 0;  // the caller's: which send to start
  };

  // budget_bytes <= 0: no budget (every lane starts when queued).
  LaneQueue(int64_t budget_bytes, Clock::duration max_wait);

  void Push(const Lane& lane, Clock::time_point now);
  // Takes the lanes to start now and counts their bytes in flight.
  std::vector<Lane> TakeStartable(Clock::time_point now);
  // A lane taken earlier has landed (or failed): its bytes leave the flight.
  void Sent(int peer, int64_t bytes);
  // Forgets every queued lane and every byte in flight.
  void Clear();

  bool empty() const { return queued_ == 0; }
  int64_t in_flight(int peer) const;

 private:
  struct Queued {
    Lane lane;
    Clock::time_point since;
  };
  struct PeerQueue {
    std::map<uint64_t, Queued> lanes;  // by push order
    int64_t in_flight = 0;
  };
  // The lane of `queue` to start next: the oldest if it waited past max_wait, else the newest.
  std::map<uint64_t, Queued>::iterator Next(PeerQueue& queue, Clock::time_point now);

  const int64_t budget_;
  const Clock::duration max_wait_;
  std::map<int, PeerQueue> peers_;
  uint64_t pushed_ = 0;
  size_t queued_ = 0;
};

}  // namespace flock
