#include "flock/neighbor/lane_queue.h"

namespace flock {

LaneQueue::LaneQueue(int64_t budget_bytes, Clock::duration max_wait)
    : budget_(budget_bytes), max_wait_(max_wait) {}

void LaneQueue::Push(const Lane& lane, Clock::time_point now) {
  peers_[lane.peer].lanes.emplace(pushed_++, Queued{lane, now});
  ++queued_;
}

std::map<uint64_t, LaneQueue::Queued>::iterator LaneQueue::Next(PeerQueue& queue,
                                                                Clock::time_point now) {
  auto oldest = queue.lanes.begin();
  if (now - oldest->second.since >= max_wait_) return oldest;
  return std::prev(queue.lanes.end());
}

std::vector<LaneQueue::Lane> LaneQueue::TakeStartable(Clock::time_point now) {
  std::vector<Lane> start;
  for (auto& [peer, queue] : peers_) {
    while (!queue.lanes.empty()) {
      auto next = Next(queue, now);
      const int64_t bytes = next->second.lane.bytes;
      const bool fits = budget_ <= 0 || queue.in_flight == 0 || queue.in_flight + bytes <= budget_;
      if (!fits) break;
      queue.in_flight += bytes;
      start.push_back(next->second.lane);
      queue.lanes.erase(next);
      --queued_;
    }
  }
  return start;
}

void LaneQueue::Sent(int peer, int64_t bytes) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  it->second.in_flight -= bytes;
  if (it->second.in_flight < 0) it->second.in_flight = 0;
}

void LaneQueue::Clear() {
  peers_.clear();
  queued_ = 0;
}

int64_t LaneQueue::in_flight(int peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? 0 : it->second.in_flight;
}

}  // namespace flock
