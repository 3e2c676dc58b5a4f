// NeighborExchange: when the receive of a lane starts. A lane is a large
// tensor in a message of its own; the sender posts it at once (it never waits
// on the receiver), but over TCP its bytes flow only once the receiver has
// posted the matching receive (MPI's rendezvous). So the receiver decides the
// order lanes cross a link in: from a peer on this host at once (shared
// memory: no link to queue on), from another host through lanes_, which keeps
// a budget of bytes per peer and starts the newest first (lane_queue.h says
// why). A queued receive only waits for receives from the same peer that are
// already posted, and those complete whatever else happens: no new wait cycle.
#include "flock/neighbor/neighbor_exchange.h"

namespace flock {

void NeighborExchange::StartReceive(Step& step, int index, char* target, LaneInto into) {
  const Incoming& in = step.in[static_cast<size_t>(index)];
  const int peer = in.spec->peer;
  if (on_this_host(peer) || options_.lane_budget_bytes <= 0) {
    StartReceiveNow(step, index, target, into);
    return;
  }
  const uint64_t id = next_lane_id_++;
  queued_receives_.emplace(
      id, QueuedReceive{Key(step.match_name, step.call->seq), index, target, into});
  // The step cannot finish (nor its buffers go) while the receive waits.
  if (into == LaneInto::kScratch) {
    step.scratch_transfer = kLaneQueued;
  } else {
    step.in[static_cast<size_t>(index)].transfer = kLaneQueued;
  }
  lanes_.Push({peer, in.bytes, id}, Clock::now());
  ++counters_.neighbor_lanes_queued;
}

TransferId NeighborExchange::StartReceiveNow(Step& step, int index, char* target, LaneInto into) {
  Incoming& in = step.in[static_cast<size_t>(index)];
  const int peer = in.spec->peer;
  auto transfer = transport_.StartRecv(target, in.bytes, peer, in.lane_tag, CommGroup::kNeighbor);
  TransferId& slot = into == LaneInto::kScratch ? step.scratch_transfer : in.transfer;
  if (transfer.ok()) {
    slot = transfer.value();
    MarkMoving(step);
    return slot;
  }
  slot = -1;
  FailPair(step, peer, transfer.status());
  if (into == LaneInto::kSum) {
    step.sum.AccumulatorLanded(transfer.status(),
                               [&](int k) { step.in[static_cast<size_t>(k)].resolved = true; });
  } else if (into == LaneInto::kScratch) {
    step.sum.ScratchLaneFailed();
  }
  return -1;
}

bool NeighborExchange::StartQueuedReceives() {
  if (lanes_.empty()) return false;
  bool started = false;
  for (const LaneQueue::Lane& lane : lanes_.TakeStartable(Clock::now())) {
    auto queued = queued_receives_.find(lane.id);
    if (queued == queued_receives_.end()) continue;
    const QueuedReceive receive = queued->second;
    queued_receives_.erase(queued);
    auto step = steps_.find(receive.step_key);
    if (step == steps_.end()) {  // cannot happen: kLaneQueued holds the step
      lanes_.Sent(lane.peer, lane.bytes);
      continue;
    }
    Step& s = step->second;
    const TransferId started_id = StartReceiveNow(s, receive.index, receive.target, receive.into);
    if (started_id >= 0) {
      budgeted_.emplace(started_id, std::make_pair(lane.peer, lane.bytes));
    } else {
      lanes_.Sent(lane.peer, lane.bytes);  // failed to start: nothing in flight
      if (receive.into == LaneInto::kScratch) StartNextLane(s);
    }
    started = true;
  }
  return started;
}

void NeighborExchange::ReceiveEnded(TransferId transfer) {
  auto it = budgeted_.find(transfer);
  if (it == budgeted_.end()) return;
  lanes_.Sent(it->second.first, it->second.second);
  budgeted_.erase(it);
}

}  // namespace flock
