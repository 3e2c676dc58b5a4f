// What arrives for a step: a neighbour's data (reduced on arrival, placed,
// or gathered), a receiver's notice that it expects this rank's data, a
// rejection; and entries for calls this rank has already finished.
#include <algorithm>
#include <cstring>

#include "flock/common/logging.h"
#include "flock/common/text.h"
#include "flock/common/weighted_kernels.h"
#include "flock/neighbor/neighbor_exchange.h"

namespace flock {

void NeighborExchange::Deliver(Step& step, int from, const NeighborEntry& entry) {
  switch (entry.type) {
    case NeighborEntryType::kData: DeliverData(step, from, entry); break;
    case NeighborEntryType::kExpect: DeliverExpect(step, from, entry); break;
    case NeighborEntryType::kReject: DeliverReject(step, from, entry); break;
    case NeighborEntryType::kGoodbye: break;  // Route takes it
  }
}

Status NeighborExchange::CheckShapes(const Step& step, int from, const NeighborEntry& entry,
                                     const std::vector<int64_t>& expected, const char* role) const {
  const Call& call = *step.call;
  // Built only for an error: this runs for every entry that arrives.
  auto who = [&] {
    return "rank " + std::to_string(from) + " (" + role + ") and rank " + std::to_string(rank_);
  };
  if (entry.kind != static_cast<uint8_t>(call.request.op.kind)) {
    return Status::Mismatch(Describe(call) + ": " + who() +
                            " called different ops under this name");
  }
  if (entry.dtype != call.request.op.tensor.dtype) {
    return Status::Mismatch(Describe(call) + ": dtype differs between " + who() + ": " +
                            DataTypeName(entry.dtype) + " vs " +
                            DataTypeName(call.request.op.tensor.dtype));
  }
  const bool gather = step.spec->mode == ExchangeStep::Mode::kGather;
  const bool same =
      gather ? entry.shape.size() == expected.size() &&
                   std::equal(expected.begin() + 1, expected.end(), entry.shape.begin() + 1)
             : entry.shape == expected;
  if (!same) {
    return Status::Mismatch(Describe(call) + ": shape differs between " + who() + ": " +
                            ShapeToString(entry.shape) + " vs " + ShapeToString(expected) +
                            (gather ? " (only dim 0 may differ)" : ""));
  }
  return Status::OK();
}

void NeighborExchange::DeliverData(Step& step, int from, const NeighborEntry& entry) {
  auto it = std::find_if(step.in.begin(), step.in.end(),
                         [&](const Incoming& in) { return in.spec->peer == from && !in.arrived; });
  if (it == step.in.end()) {
    RefuseUnexpected(step, from, entry);
    return;
  }
  Incoming& in = *it;
  in.arrived = true;
  Status checked = CheckShapes(step, from, entry, in.spec->shape, "sender");
  if (checked.ok() && entry.check != step.spec->check) {
    checked = Status::Mismatch(Describe(*step.call) + ": enable_topo_check differs between rank " +
                               std::to_string(from) + " and rank " + std::to_string(rank_));
  }
  if (!checked.ok()) {
    if (entry.lane_tag >= 0) DrainLane(from, entry);
    FailPair(step, from, checked);
    return;
  }
  in.scale = entry.scale;
  in.bytes = entry.payload_bytes;
  in.lane_tag = entry.lane_tag;
  in.shape = entry.shape;
  const int index = static_cast<int>(it - step.in.begin());
  if (step.spec->mode == ExchangeStep::Mode::kReduce) {
    ReduceArrival(step, index, entry);
  } else {
    PlaceArrival(step, in, entry);
  }
}

void NeighborExchange::RefuseUnexpected(Step& step, int from, const NeighborEntry& entry) {
  std::vector<int> sources;
  for (const Incoming& in : step.in) sources.push_back(in.spec->peer);
  const Status status = Status::Mismatch(
      Describe(*step.call) + ": rank " + std::to_string(from) + " sent its tensor to rank " +
      std::to_string(rank_) + ", which does not receive from it in this call (its sources: " +
      BracketedList(sources) + ")");
  if (step.status.ok()) step.status = status;
  QueueReject(from, step.match_name, step.call->seq, status);
  if (entry.lane_tag >= 0) DrainLane(from, entry);
}

void NeighborExchange::ReduceArrival(Step& step, int index, const NeighborEntry& entry) {
  Incoming& in = step.in[static_cast<size_t>(index)];
  step.sum.Announce(index, in.scale, in.bytes);
  if (entry.lane_tag < 0) {
    if (step.sum.AddInline(index, entry.payload)) in.resolved = true;
    return;
  }
  void* acc = step.sum.TakeAccumulatorFor(index);
  if (acc == nullptr) {
    step.sum.QueueLane(index);
    StartNextLane(step);
    return;
  }
  StartReceive(step, index, static_cast<char*>(acc), LaneInto::kSum);
}

void NeighborExchange::PlaceArrival(Step& step, Incoming& in, const NeighborEntry& entry) {
  char* lane_target = nullptr;
  if (step.spec->mode == ExchangeStep::Mode::kPlace) {
    lane_target = step.target + in.spec->offset * DataTypeSize(step.call->request.op.tensor.dtype);
  } else {  // kGather
    in.piece.resize(static_cast<size_t>(entry.payload_bytes));
    lane_target = in.piece.data();
  }
  if (entry.lane_tag < 0) {
    if (entry.payload_bytes > 0) std::memcpy(lane_target, entry.payload, entry.payload_bytes);
    in.resolved = true;
    return;
  }
  StartReceive(step, static_cast<int>(&in - step.in.data()), lane_target, LaneInto::kPlace);
}

void NeighborExchange::StartNextLane(Step& step) {
  // A failed start leaves the scratch buffer free and moves on to the next lane.
  while (step.scratch_transfer == -1) {
    const int index = step.sum.NextScratchLane();
    if (index < 0) return;
    StartReceive(step, index, step.sum.scratch(), LaneInto::kScratch);
  }
}

bool NeighborExchange::ScratchProgress(Step& step) {
  auto done = transport_.TestTransfer(step.scratch_transfer);
  if (done.ok() && !done.value()) return false;
  ReceiveEnded(step.scratch_transfer);
  step.scratch_transfer = -1;
  const int index = step.sum.ScratchLanded(done.ok());
  if (index < 0) return true;  // it waits for the lane landing in the sum itself
  Incoming& in = step.in[static_cast<size_t>(index)];
  if (!done.ok()) FailPair(step, in.spec->peer, done.status());
  in.resolved = true;
  StartNextLane(step);
  return true;
}

void NeighborExchange::DeliverExpect(Step& step, int from, const NeighborEntry& entry) {
  auto it = std::find_if(step.out.begin(), step.out.end(),
                         [&](const Outgoing& out) { return out.spec->peer == from; });
  if (it == step.out.end()) {
    std::vector<int> destinations;
    for (const Outgoing& out : step.out) destinations.push_back(out.spec->peer);
    const Status status = Status::Mismatch(
        Describe(*step.call) + ": rank " + std::to_string(from) + " expects a tensor from rank " +
        std::to_string(rank_) + ", which does not send to it in this call (its destinations: " +
        BracketedList(destinations) + ")");
    if (step.status.ok()) step.status = status;
    QueueReject(from, step.match_name, step.call->seq, status);
    return;
  }
  const Status checked = CheckShapes(step, from, entry, it->spec->shape, "receiver");
  if (!checked.ok()) {
    FailPair(step, from, checked);
    return;
  }
  it->confirmed = true;
}

void NeighborExchange::DeliverReject(Step& step, int from, const NeighborEntry& entry) {
  const bool involved = std::any_of(step.in.begin(), step.in.end(),
                                    [&](const Incoming& in) { return in.spec->peer == from; }) ||
                        std::any_of(step.out.begin(), step.out.end(),
                                    [&](const Outgoing& out) { return out.spec->peer == from; });
  if (!involved) return;  // a rejected call told its static neighbours; this step is not about it
  if (step.status.ok()) step.status = Status(entry.code, entry.message);
  for (Incoming& in : step.in) {
    // A lane already announced still arrives and is reduced or drained as usual.
    if (in.spec->peer == from && !in.arrived) in.resolved = true;
  }
  for (Outgoing& out : step.out) {
    if (out.spec->peer == from) out.rejected = true;
  }
}

void NeighborExchange::HandleStale(int from, const NeighborEntry& entry) {
  switch (entry.type) {
    case NeighborEntryType::kData:
      FLOCK_LOG(kWarning, "neighbor")
          << "rank " << from << " sent '" << entry.name << "' (call " << entry.seq
          << ") after this rank's call ended without receiving from it; dropped";
      if (entry.lane_tag >= 0) DrainLane(from, entry);
      if (entry.check) {  // the sender waits for this rank's confirmation: refuse instead
        QueueReject(from, entry.name, entry.seq,
                    Status::Mismatch("'" + entry.name + "': rank " + std::to_string(from) +
                                     " sent its tensor to rank " + std::to_string(rank_) +
                                     ", whose call (number " + std::to_string(entry.seq) +
                                     " of this name) does not receive from it"));
      }
      break;
    case NeighborEntryType::kExpect:
      QueueReject(from, entry.name, entry.seq,
                  Status::Mismatch("'" + entry.name + "': rank " + std::to_string(from) +
                                   " expects a tensor from rank " + std::to_string(rank_) +
                                   ", whose call (number " + std::to_string(entry.seq) +
                                   " of this name) ended without sending to it"));
      break;
    case NeighborEntryType::kReject:  // this rank's call ended already
    case NeighborEntryType::kGoodbye: break;
  }
}

void NeighborExchange::DrainLane(int from, const NeighborEntry& entry) {
  auto buffer = std::make_unique<std::vector<char>>(static_cast<size_t>(entry.payload_bytes));
  auto transfer = transport_.StartRecv(buffer->data(), entry.payload_bytes, from, entry.lane_tag,
                                       CommGroup::kNeighbor);
  if (!transfer.ok()) {
    NoteTransportFailure(transfer.status());
    return;
  }
  discards_.push_back(Discard{transfer.value(), from, std::move(buffer)});
}

void NeighborExchange::MarkMoving(Step& step) {
  if (step.moving) return;
  step.moving = true;
  moving_.push_back(&step);
}

bool NeighborExchange::HasTransfers(const Step& step) {
  if (step.scratch_transfer >= 0 || step.scratch_transfer == kLaneQueued) return true;
  for (const Incoming& in : step.in)
    if (in.transfer >= 0 || in.transfer == kLaneQueued) return true;
  for (const Outgoing& out : step.out)
    if (out.lane >= 0) return true;
  return false;
}

bool NeighborExchange::ProgressMoving() {
  // ProgressStep may start a step's next lane (MarkMoving appends to moving_),
  // so this pass works on a snapshot and keeps what is still in flight. The
  // two vectors swap roles each pass and keep their capacity.
  polling_.swap(moving_);
  for (Step* step : polling_) step->moving = false;
  bool did_work = false;
  for (Step* step : polling_) {
    did_work |= ProgressStep(*step);
    if (HasTransfers(*step)) MarkMoving(*step);
  }
  polling_.clear();
  return did_work;
}

bool NeighborExchange::ProgressStep(Step& step) {
  bool did_work = false;
  if (step.scratch_transfer >= 0) did_work = ScratchProgress(step);
  for (size_t i = 0; i < step.in.size(); ++i) {
    Incoming& in = step.in[i];
    if (in.transfer < 0) continue;
    auto done = transport_.TestTransfer(in.transfer);
    if (!done.ok() || done.value()) {
      ReceiveEnded(in.transfer);
      in.transfer = -1;
      did_work = true;
      if (static_cast<int>(i) == step.sum.accumulator_lane()) {
        // A lane that landed in scratch meanwhile is added now: scratch is free.
        const bool scratch_frees = step.sum.scratch_waiting();
        step.sum.AccumulatorLanded(done.status(),
                                   [&](int k) { step.in[static_cast<size_t>(k)].resolved = true; });
        if (scratch_frees) StartNextLane(step);
        continue;
      }
      in.resolved = true;
      if (!done.ok() && step.status.ok()) step.status = done.status();
    }
  }
  for (Outgoing& out : step.out) {
    if (out.lane < 0) continue;
    auto done = transport_.TestTransfer(out.lane);
    if (!done.ok() || done.value()) {
      out.lane = -2;
      if (!done.ok() && step.status.ok()) step.status = done.status();
      did_work = true;
    }
  }
  return did_work;
}

}  // namespace flock
