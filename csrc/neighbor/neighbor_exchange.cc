#include "flock/neighbor/neighbor_exchange.h"

#include <algorithm>
#include <cstring>

#include "flock/common/logging.h"
#include "flock/common/weighted_kernels.h"
#include "flock/neighbor/op_steps.h"

namespace flock {
namespace {

constexpr int kControlTag = 1;

}  // namespace

NeighborExchange::NeighborExchange(Transport& transport, Options options, EngineCounters& counters,
                                   Timeline& timeline, FinishFn finish)
    : transport_(transport),
      options_(options),
      rank_(transport.rank(CommGroup::kNeighbor)),
      size_(transport.size(CommGroup::kNeighbor)),
      counters_(counters),
      timeline_(timeline),
      finish_(std::move(finish)),
      device_calls_(rank_),
      outbox_(options_.message_limit_bytes, options_.cycle_time_ms),
      lanes_(options_.lane_budget_bytes,
             std::chrono::duration_cast<Clock::duration>(
                 std::chrono::duration<double>(options_.lane_max_wait_s))) {}

std::string NeighborExchange::Key(const std::string& match_name, int64_t seq) {
  return StepKey(match_name, seq);
}

std::string NeighborExchange::Describe(const Call& call) {
  return std::string(OpKindName(call.request.op.kind)) + " '" + call.request.op.name + "'";
}

void NeighborExchange::Add(PendingRequest request) {
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  const OpRequest& op = call->request.op;
  call->match_name = NeighborMatchName(op);
  call->seq = call_numbers_[call->match_name]++;
  Status withdrawn = device_calls_.TakeOwed(call->match_name, call->seq);
  if (!withdrawn.ok()) {  // every peer got the same answer from rank 0: nothing to tell
    call->status = withdrawn;
    MarkCallDone(call->match_name, call->seq, op.kind);
    FinishCall(*call);
    return;
  }

  if (!op.local_status.ok() || op.steps == nullptr) {
    call->status =
        op.local_status.ok() ? Status::Internal("neighbor op without steps") : op.local_status;
    // Rejected here: tell the ranks this call would have talked to, so they
    // fail it instead of waiting for this rank.
    Reject(*call, op.notify_on_reject,
           Status(call->status.code(), "rank " + std::to_string(rank_) + " rejected its " +
                                           Describe(*call) + ": " + call->status.message()));
    FinishCall(*call);
    return;
  }
  StartStep(call);
}

void NeighborExchange::Reject(const Call& call, const std::vector<int>& peers,
                              const Status& status) {
  for (const std::string& suffix : StepSuffixes(call.request.op.kind)) {
    const std::string name = call.match_name + suffix;
    mailbox_.MarkDone(name, call.seq);
    for (int peer : peers) QueueReject(peer, name, call.seq, status);
    for (Arrival& a : mailbox_.Take(name, call.seq)) HandleStale(a.from, a.entry);
  }
}

char* NeighborExchange::Buffer(Call& call, StepBuffer buffer) const {
  switch (buffer) {
    case StepBuffer::kInput: return static_cast<char*>(call.request.op.tensor.data);
    case StepBuffer::kOutput: return static_cast<char*>(call.request.output.data);
    case StepBuffer::kMean: return call.mean.data();
    case StepBuffer::kResult: return call.result.data();
  }
  return nullptr;
}

void NeighborExchange::StartStep(const std::shared_ptr<Call>& call) {
  const ExchangeStep& spec = (*call->request.op.steps)[call->next_step++];
  const size_t elem = DataTypeSize(call->request.op.tensor.dtype);
  // The slice buffers of a multi-step call, sized by the step that writes them.
  if (spec.target == StepBuffer::kMean) call->mean = pool_.Acquire(spec.target_count * elem);
  if (spec.target == StepBuffer::kResult) call->result = pool_.Acquire(spec.target_count * elem);

  const std::string match_name = call->match_name + spec.suffix;
  const std::string key = Key(match_name, call->seq);
  Step& step = steps_[key];
  step.call = call;
  step.spec = &spec;
  step.match_name = match_name;
  step.started = Clock::now();
  step.target = spec.mode == ExchangeStep::Mode::kGather ? nullptr : Buffer(*call, spec.target);
  timeline_.Begin(call->request.op.name,
                  spec.suffix.empty() ? std::string_view("COMMUNICATE") : spec.suffix);
  PlaceSelf(step, Buffer(*call, spec.self_from) + spec.self_offset * elem);
  step.in.reserve(spec.recvs.size());
  for (const StepRecv& recv : spec.recvs) {
    Incoming in;
    in.spec = &recv;
    step.in.push_back(std::move(in));
  }
  QueueSends(step, key);
  FLOCK_LOG(kTrace, "neighbor") << "started '" << match_name << "' call " << call->seq << " ("
                                << step.in.size() << " sources, " << step.out.size()
                                << " destinations)";
  for (Arrival& a : mailbox_.Take(match_name, call->seq)) Deliver(step, a.from, a.entry);
  // What a departed peer sent before leaving is in; nothing more will come.
  // (Looked for only once some rank has left: OpenPeers builds a list.)
  if (departed_ || !gone_.empty() || !unreadable_.empty()) ResolveLeftPeers(step);
  TryComplete(key);
}

void NeighborExchange::PlaceSelf(Step& step, const char* self) {
  const ExchangeStep& spec = *step.spec;
  const DataType dtype = step.call->request.op.tensor.dtype;
  if (spec.mode == ExchangeStep::Mode::kReduce) {
    step.sum.Begin(pool_, spec, dtype, step.target, Buffer(*step.call, StepBuffer::kInput), self,
                   &step.status);
  } else if (spec.mode == ExchangeStep::Mode::kPlace && spec.self_count > 0) {
    const size_t elem = DataTypeSize(dtype);
    std::memmove(step.target + spec.self_target_offset * elem, self, spec.self_count * elem);
  }
}

NeighborEntry NeighborExchange::EntryOf(const Step& step, NeighborEntryType type,
                                        const std::vector<int64_t>& shape) const {
  NeighborEntry entry;
  entry.type = type;
  entry.name = step.match_name;
  entry.seq = step.call->seq;
  entry.kind = static_cast<uint8_t>(step.call->request.op.kind);
  entry.dtype = step.call->request.op.tensor.dtype;
  entry.shape = shape;
  return entry;
}

void NeighborExchange::QueueSends(Step& step, const std::string& key) {
  const ExchangeStep& spec = *step.spec;
  const size_t elem = DataTypeSize(step.call->request.op.tensor.dtype);
  step.out.reserve(spec.sends.size());
  for (const StepSend& send : spec.sends) {
    Outgoing out;
    out.spec = &send;
    out.data = Buffer(*step.call, send.from) + send.offset * elem;
    out.confirmed = !spec.check;
    step.out.push_back(out);
    Outbound ob;
    ob.entry = EntryOf(step, NeighborEntryType::kData, send.shape);
    ob.entry.scale = send.scale;
    ob.entry.check = spec.check;
    ob.entry.payload_bytes = send.count * static_cast<int64_t>(elem);
    ob.entry.payload = out.data;
    ob.entry.lane_tag = ob.entry.payload_bytes > options_.inline_limit_bytes ? 0 : -1;
    ob.step_key = key;
    ob.out_index = static_cast<int>(step.out.size()) - 1;
    Queue(send.peer, std::move(ob));
  }
  if (!spec.check) return;
  for (const StepRecv& recv : spec.recvs) {  // "I expect your tensor": checked by the sender
    Outbound ob;
    ob.entry = EntryOf(step, NeighborEntryType::kExpect, recv.shape);
    Queue(recv.peer, std::move(ob));
  }
}

void NeighborExchange::ResolveLeftPeers(Step& step) {
  for (int peer : OpenPeers(step)) {
    if (departed_) {
      AbandonPair(step, peer,
                  Status::Aborted("flock was shut down on rank " + std::to_string(rank_)));
    } else if (gone_.count(peer) > 0) {
      AbandonPair(step, peer,
                  Status::Aborted(Describe(*step.call) + ": rank " + std::to_string(peer) +
                                  " shut down before this call"));
    } else if (auto it = unreadable_.find(peer); it != unreadable_.end()) {
      FailPair(step, peer, Status::Internal(Describe(*step.call) + ": " + it->second));
    }
  }
}

void NeighborExchange::Queue(int peer, Outbound outbound) {
  // After this rank's goodbye nothing is sent, and a peer that left reads only ours.
  const bool goodbye = outbound.entry.type == NeighborEntryType::kGoodbye;
  if (departed_ || (gone_.count(peer) > 0 && !goodbye)) return;
  outbox_.Queue(peer, std::move(outbound), Clock::now());
}

void NeighborExchange::QueueReject(int peer, const std::string& match_name, int64_t seq,
                                   const Status& status) {
  Outbound ob;
  ob.entry.type = NeighborEntryType::kReject;
  ob.entry.name = match_name;
  ob.entry.seq = seq;
  ob.entry.code = status.code();
  ob.entry.message = status.message();
  Queue(peer, std::move(ob));
  outbox_.MarkUrgent();  // the peer waits for it: no cycle's delay
}

NeighborExchange::Clock::time_point NeighborExchange::flush_deadline() const {
  return outbox_.deadline();
}

bool NeighborExchange::StillToSend(int peer, const Outbound& ob) const {
  // A peer that left after these were queued gets only our goodbye.
  if (ob.entry.type == NeighborEntryType::kGoodbye) return true;
  if (gone_.count(peer) > 0) return false;
  if (ob.entry.type != NeighborEntryType::kData) return true;
  // Data for a step that ended, or whose pair already failed, is dropped.
  auto it = steps_.find(ob.step_key);
  return it != steps_.end() && !it->second.out[static_cast<size_t>(ob.out_index)].rejected;
}

bool NeighborExchange::Flush(bool force) {
  if (!outbox_.Due(force, Clock::now())) return false;
  auto still_to_send = [this](int peer, const Outbound& ob) { return StillToSend(peer, ob); };
  for (OutboxMessage& message : outbox_.Take(still_to_send)) Send(message);
  return true;
}

void NeighborExchange::Send(OutboxMessage& message) {
  const int peer = message.peer;
  FLOCK_LOG(kTrace, "neighbor") << "sending " << message.entries.size() << " entries to rank "
                                << peer;
  Status s = transport_.PostSend(EncodeNeighborMessage(message.entries), peer, kControlTag,
                                 CommGroup::kNeighbor);
  if (!s.ok()) NoteTransportFailure(s);
  ++counters_.neighbor_messages;
  for (size_t i = 0; i < message.entries.size(); ++i) {
    const NeighborEntry& entry = message.entries[i];
    if (entry.type != NeighborEntryType::kData) continue;
    ++counters_.neighbor_entries;
    counters_.neighbor_bytes += entry.payload_bytes;
    Step& step = steps_.at(message.sources[i].step_key);
    Outgoing& out = step.out[static_cast<size_t>(message.sources[i].out_index)];
    out.flushed = true;
    if (entry.lane_tag < 0) continue;
    ++counters_.neighbor_lanes;
    // Posted at once: whatever the receiver does, the sender never waits on it.
    auto lane = transport_.StartSend(entry.payload, entry.payload_bytes, peer, entry.lane_tag,
                                     CommGroup::kNeighbor);
    if (lane.ok()) {
      out.lane = lane.value();
      MarkMoving(step);
    } else {
      FailPair(step, peer, lane.status());
    }
  }
}

bool NeighborExchange::Poll() {
  bool did_work = false;
  int from = 0;
  while (true) {
    std::vector<char> bytes;
    auto got = transport_.TryReceive(-1, kControlTag, CommGroup::kNeighbor, &from, &bytes);
    if (!got.ok()) {
      NoteTransportFailure(got.status());
      break;
    }
    if (!got.value()) break;
    did_work = true;
    auto shared = std::make_shared<const std::vector<char>>(std::move(bytes));
    auto entries = DecodeNeighborMessage(shared);
    if (!entries.ok()) {
      MarkUnreadable(from, entries.status());
      continue;
    }
    for (NeighborEntry& e : entries.value()) Route(from, std::move(e), shared);
  }
  for (auto it = discards_.begin(); it != discards_.end();) {
    auto done = transport_.TestTransfer(it->transfer);
    if (!done.ok() || done.value()) {
      it = discards_.erase(it);
      did_work = true;
    } else {
      ++it;
    }
  }
  did_work |= ProgressMoving();
  did_work |= StartQueuedReceives();
  did_work |= TryCompleteAll();
  return did_work;
}

NeighborExchange::Transfers NeighborExchange::transfers() const {
  // Receives the peer has already sent for, and sends whose receiver has
  // confirmed it reached the call (topology check): both finish within the
  // transfer time. A send to a peer on this host still computing is not
  // polled for: with the single-copy shared-memory path the receiver pulls
  // the bytes itself.
  Transfers found;
  auto note = [&](int peer) {
    found.any = true;
    found.on_this_host |= on_this_host(peer);
  };
  for (const Discard& discard : discards_) note(discard.peer);
  for (const Step* moving : moving_) {  // every step with a transfer in flight
    const Step& step = *moving;
    if (found.on_this_host) break;
    if (step.scratch_transfer >= 0)
      note(step.in[static_cast<size_t>(step.sum.scratch_owner())].spec->peer);
    for (const Incoming& in : step.in)
      if (in.transfer >= 0) note(in.spec->peer);
    for (const Outgoing& out : step.out) {
      if (out.lane < 0) continue;
      // Over a network the sender's MPI must push every fragment itself.
      if ((step.spec->check && out.confirmed) || !on_this_host(out.spec->peer))
        note(out.spec->peer);
    }
  }
  return found;
}

bool NeighborExchange::on_this_host(int peer) const {
  const auto& near = options_.peer_on_this_host;
  return peer < 0 || static_cast<size_t>(peer) >= near.size() || near[static_cast<size_t>(peer)];
}

bool NeighborExchange::TryCompleteAll() {
  // Completing a step may start the call's next one (steps_ changes), so the
  // keys are collected first — only those of finished steps: this runs on
  // every pass of the loop, over every step in flight.
  std::vector<std::string> keys;
  for (const auto& [key, step] : steps_) {
    if (Finished(step)) keys.push_back(key);
  }
  bool completed = false;
  for (const std::string& key : keys) completed |= TryComplete(key);
  return completed;
}

bool NeighborExchange::Finished(const Step& step) {
  // A send's lane in flight is still being read by its receiver.
  if (HasTransfers(step) || !step.sum.settled()) return false;
  for (const Incoming& in : step.in) {
    if (!in.resolved) return false;
  }
  for (const Outgoing& out : step.out) {
    if (!out.rejected && !(out.flushed && out.confirmed)) return false;
  }
  return true;
}

void NeighborExchange::Route(int from, NeighborEntry entry,
                             const std::shared_ptr<const std::vector<char>>& bytes) {
  FLOCK_LOG(kTrace, "neighbor") << "from rank " << from << ": entry type "
                                << static_cast<int>(entry.type) << " for '" << entry.name
                                << "' call " << entry.seq;
  if (entry.type == NeighborEntryType::kGoodbye) {
    OnGoodbye(from);
    return;
  }
  const std::string key = Key(entry.name, entry.seq);
  auto it = steps_.find(key);
  if (it != steps_.end()) {
    Deliver(it->second, from, entry);
    return;
  }
  if (!device_calls_.empty() && device_calls_.Intercept(key, from)) {
    if (entry.type == NeighborEntryType::kData && entry.lane_tag >= 0) DrainLane(from, entry);
    return;
  }
  if (departed_) {  // a call this rank will not make; the sender reads the goodbye
    if (entry.type == NeighborEntryType::kData && entry.lane_tag >= 0) DrainLane(from, entry);
    return;
  }
  if (mailbox_.Done(entry.name, entry.seq)) {
    HandleStale(from, entry);  // this rank is past that step
    return;
  }
  const std::string name = entry.name;
  const int64_t seq = entry.seq;
  mailbox_.Keep(name, seq, Arrival{from, std::move(entry), bytes});
}

bool NeighborExchange::TryComplete(const std::string& key) {
  auto it = steps_.find(key);
  if (it == steps_.end()) return false;
  Step& step = it->second;
  if (!Finished(step)) return false;
  Status status = step.status.ok() ? FinishStep(step) : step.status;
  std::shared_ptr<Call> call = step.call;
  timeline_.End(call->request.op.name);
  FLOCK_LOG(kTrace, "neighbor") << "completed '" << step.match_name << "' call " << call->seq
                                << ": " << (status.ok() ? "ok" : status.ToString());
  mailbox_.MarkDone(step.match_name, call->seq);
  steps_.erase(it);
  if (call->status.ok() && !status.ok()) call->status = status;
  // The peers of later steps wait for them: a failed call tells them why
  // instead of running them (RejectLaterSteps); a rank that is leaving tells
  // them with its goodbye.
  if (call->next_step < call->request.op.steps->size() && !departed_) {
    if (call->status.ok()) {
      StartStep(call);
      return true;
    }
    RejectLaterSteps(*call);
  }
  FinishCall(*call);
  return true;
}

Status NeighborExchange::FinishStep(Step& step) {
  const ExchangeStep& spec = *step.spec;
  Call& call = *step.call;
  const DataType dtype = call.request.op.tensor.dtype;
  if (spec.mode == ExchangeStep::Mode::kReduce) return step.sum.Finish();
  if (spec.mode == ExchangeStep::Mode::kPlace) return Status::OK();
  auto out = std::make_shared<GatheredTensor>();
  out->dtype = dtype;
  out->shape = call.request.op.tensor.shape;
  if (out->shape.empty()) out->shape = {1};  // a 0-d tensor gathers as one row
  int64_t rows = 0, total = 0;
  for (const Incoming& in : step.in) {
    rows += in.shape.empty() ? 1 : in.shape[0];
    total += static_cast<int64_t>(in.piece.size());
  }
  out->shape[0] = rows;
  out->bytes.resize(static_cast<size_t>(total));
  int64_t offset = 0;
  for (const Incoming& in : step.in) {
    if (!in.piece.empty())
      std::memcpy(out->bytes.data() + offset, in.piece.data(), in.piece.size());
    offset += static_cast<int64_t>(in.piece.size());
  }
  call.gathered = std::move(out);
  return Status::OK();
}

void NeighborExchange::FinishCall(Call& call) {
  // Steps the call did not run (this rank left) are done too: none will run.
  const auto* steps = call.request.op.steps.get();
  if (steps != nullptr && call.next_step < steps->size()) {
    for (const std::string& suffix : StepSuffixes(call.request.op.kind))
      mailbox_.MarkDone(call.match_name + suffix, call.seq);
  }
  Status status = call.status;
  if (!status.ok() && status.message().rfind(Describe(call), 0) != 0 &&
      status.message().rfind("rank ", 0) != 0) {
    status = Status(status.code(), Describe(call) + ": " + status.message());
  }
  finish_(call.request, std::move(status), std::move(call.gathered));
}

}  // namespace flock
