#include "neighbor/neighbor_exchange.h"

#include <algorithm>
#include <cstring>

#include "common/logging.h"
#include "common/weighted_kernels.h"

namespace flock {
namespace {

constexpr int kControlTag = 1;
// Lane tags cycle through a range every MPI implementation allows (>= 32767).
constexpr int kLaneTagBase = 100;
constexpr int kLaneTagRange = 30000;

std::string RankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

// The step suffixes a call of `kind` goes through (a rejected call tells its
// peers about each, so none of its steps is waited for).
std::vector<std::string> StepSuffixes(OpKind kind) {
  if (kind == OpKind::kHierarchicalNeighborAllreduce)
    return {"/local-reduce", "/machines", "/local-gather"};
  return {""};
}

}  // namespace

NeighborExchange::NeighborExchange(Transport& transport, Options options,
                                   EngineCounters& counters, Timeline& timeline, FinishFn finish)
    : transport_(transport),
      options_(options),
      rank_(transport.rank(CommGroup::kNeighbor)),
      counters_(counters),
      timeline_(timeline),
      finish_(std::move(finish)) {}

std::string NeighborExchange::Key(const std::string& match_name, int64_t seq) {
  return match_name + '\x1f' + std::to_string(seq);
}

std::string NeighborExchange::Describe(const Call& call) {
  return std::string(OpKindName(call.request.op.kind)) + " '" + call.request.op.name + "'";
}

void NeighborExchange::Add(PendingRequest request) {
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  const OpRequest& op = call->request.op;
  call->match_name = op.auto_named ? std::string(OpKindName(op.kind)) + ".*" : op.name;
  call->seq = next_seq_[call->match_name]++;

  if (!op.local_status.ok() || op.steps == nullptr) {
    call->status = op.local_status.ok() ? Status::Internal("neighbor op without steps")
                                        : op.local_status;
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
    if (!suffix.empty()) next_seq_[name] = std::max(next_seq_[name], call.seq + 1);
    for (int peer : peers) QueueReject(peer, name, call.seq, status);
    auto pending = mailbox_.find(Key(name, call.seq));
    if (pending == mailbox_.end()) continue;
    std::vector<Arrival> arrivals = std::move(pending->second);
    mailbox_.erase(pending);
    for (Arrival& a : arrivals) HandleStale(a.from, a.entry);
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
  const DataType dtype = call->request.op.tensor.dtype;
  const size_t elem = DataTypeSize(dtype);
  // The slice buffers of a multi-step call, sized by the step that writes them.
  if (spec.target == StepBuffer::kMean) call->mean.resize(spec.target_count * elem);
  if (spec.target == StepBuffer::kResult) call->result.resize(spec.target_count * elem);

  const std::string match_name = call->match_name + spec.suffix;
  next_seq_[match_name] = std::max(next_seq_[match_name], call->seq + 1);
  const std::string key = Key(match_name, call->seq);
  Step& step = steps_[key];
  step.call = call;
  step.spec = &spec;
  step.match_name = match_name;
  step.started = Clock::now();
  step.target = spec.mode == ExchangeStep::Mode::kGather ? nullptr : Buffer(*call, spec.target);
  timeline_.Begin(call->request.op.name, spec.suffix.empty() ? "COMMUNICATE" : spec.suffix);

  const char* self = Buffer(*call, spec.self_from) + spec.self_offset * elem;
  if (spec.mode == ExchangeStep::Mode::kReduce) {
    // The sum builds up in the target itself unless it needs a wider type or
    // the target is the input (in place), which must stay intact until sent.
    const char* input = Buffer(*call, StepBuffer::kInput);
    if (AccumulatorType(dtype) == dtype && step.target != input) {
      step.acc = step.target;
    } else {
      step.acc_storage.resize(spec.target_count * DataTypeSize(AccumulatorType(dtype)));
      step.acc = step.acc_storage.data();
    }
    step.status = WeightedStore(step.acc, self, dtype, spec.self_weight, spec.self_count);
  } else if (spec.mode == ExchangeStep::Mode::kPlace && spec.self_count > 0) {
    std::memmove(step.target + spec.self_target_offset * elem, self, spec.self_count * elem);
  }

  for (const StepRecv& recv : spec.recvs) {
    Incoming in;
    in.spec = &recv;
    step.in.push_back(std::move(in));
  }
  for (const StepSend& send : spec.sends) {
    Outgoing out;
    out.spec = &send;
    out.data = Buffer(*call, send.from) + send.offset * elem;
    out.confirmed = !spec.check;
    step.out.push_back(out);
    Outbound ob;
    ob.entry.type = NeighborEntryType::kData;
    ob.entry.name = match_name;
    ob.entry.seq = call->seq;
    ob.entry.kind = static_cast<uint8_t>(call->request.op.kind);
    ob.entry.dtype = dtype;
    ob.entry.shape = send.shape;
    ob.entry.scale = send.scale;
    ob.entry.check = spec.check;
    ob.entry.payload_bytes = send.count * static_cast<int64_t>(elem);
    ob.entry.payload = out.data;
    ob.entry.lane_tag = ob.entry.payload_bytes > options_.inline_limit_bytes ? 0 : -1;
    ob.step_key = key;
    ob.out_index = static_cast<int>(step.out.size()) - 1;
    Queue(send.peer, std::move(ob));
  }
  if (spec.check) {
    for (const StepRecv& recv : spec.recvs) {
      Outbound ob;
      ob.entry.type = NeighborEntryType::kExpect;
      ob.entry.name = match_name;
      ob.entry.seq = call->seq;
      ob.entry.kind = static_cast<uint8_t>(call->request.op.kind);
      ob.entry.dtype = dtype;
      ob.entry.shape = recv.shape;
      Queue(recv.peer, std::move(ob));
    }
  }
  FLOCK_LOG(kTrace, "neighbor") << "started '" << match_name << "' call " << call->seq << " ("
                                << step.in.size() << " sources, " << step.out.size()
                                << " destinations)";

  auto pending = mailbox_.find(key);
  if (pending != mailbox_.end()) {
    std::vector<Arrival> arrivals = std::move(pending->second);
    mailbox_.erase(pending);
    for (Arrival& a : arrivals) Deliver(step, a.from, a.entry);
  }
  TryComplete(key);
}

void NeighborExchange::Queue(int peer, Outbound outbound) {
  const auto now = Clock::now();
  if (outbox_.empty()) first_unsent_ = now;
  last_unsent_ = now;
  outbox_[peer].push_back(std::move(outbound));
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
  urgent_ = true;
}

NeighborExchange::Clock::time_point NeighborExchange::flush_deadline() const {
  const auto cycle = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(options_.cycle_time_ms));
  return std::min(last_unsent_ + cycle, first_unsent_ + 10 * cycle);
}

bool NeighborExchange::Flush(bool force) {
  if (outbox_.empty()) return false;
  if (!force && !urgent_ && Clock::now() < flush_deadline()) return false;
  urgent_ = false;
  std::map<int, std::vector<Outbound>> outbox;
  outbox.swap(outbox_);
  for (auto& [peer, outbounds] : outbox) {
    // Drop data for steps that ended or whose pair already failed.
    std::vector<Outbound> live;
    for (Outbound& ob : outbounds) {
      if (ob.entry.type == NeighborEntryType::kData) {
        auto it = steps_.find(ob.step_key);
        if (it == steps_.end() || it->second.out[ob.out_index].rejected) continue;
        if (ob.entry.lane_tag >= 0) {
          int64_t& counter = lane_counters_[peer];
          ob.entry.lane_tag = kLaneTagBase + static_cast<int>(counter++ % kLaneTagRange);
        }
      }
      live.push_back(std::move(ob));
    }
    // One message per peer, split only past the inline byte limit.
    size_t begin = 0;
    while (begin < live.size()) {
      std::vector<NeighborEntry> entries;
      int64_t inline_bytes = 0;
      size_t end = begin;
      while (end < live.size()) {
        const NeighborEntry& e = live[end].entry;
        const int64_t add =
            e.type == NeighborEntryType::kData && e.lane_tag < 0 ? e.payload_bytes : 0;
        if (end > begin && inline_bytes + add > options_.message_limit_bytes) break;
        inline_bytes += add;
        entries.push_back(e);
        ++end;
      }
      FLOCK_LOG(kTrace, "neighbor") << "sending " << entries.size() << " entries to rank " << peer;
      Status s = transport_.PostSend(EncodeNeighborMessage(entries), peer, kControlTag,
                                     CommGroup::kNeighbor);
      if (!s.ok()) FLOCK_LOG(kError, "neighbor") << s.ToString();
      ++counters_.neighbor_messages;
      for (size_t i = begin; i < end; ++i) {
        Outbound& ob = live[i];
        if (ob.entry.type != NeighborEntryType::kData) continue;
        ++counters_.neighbor_entries;
        counters_.neighbor_bytes += ob.entry.payload_bytes;
        Step& step = steps_.at(ob.step_key);
        Outgoing& out = step.out[ob.out_index];
        out.flushed = true;
        if (ob.entry.lane_tag < 0) continue;
        ++counters_.neighbor_lanes;
        auto lane = transport_.StartSend(ob.entry.payload, ob.entry.payload_bytes, peer,
                                         ob.entry.lane_tag, CommGroup::kNeighbor);
        if (lane.ok()) {
          out.lane = lane.value();
        } else {
          FailPair(step, peer, lane.status());
        }
      }
      begin = end;
    }
  }
  return true;
}

bool NeighborExchange::Poll() {
  bool did_work = false;
  int from = 0;
  while (true) {
    std::vector<char> bytes;
    auto got = transport_.TryReceive(-1, kControlTag, CommGroup::kNeighbor, &from, &bytes);
    if (!got.ok()) {
      FLOCK_LOG(kError, "neighbor") << got.status().ToString();
      break;
    }
    if (!got.value()) break;
    did_work = true;
    auto shared = std::make_shared<const std::vector<char>>(std::move(bytes));
    auto entries = DecodeNeighborMessage(shared);
    if (!entries.ok()) {
      FLOCK_LOG(kError, "neighbor") << "from rank " << from << ": " << entries.status().ToString();
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
  std::vector<std::string> keys;
  keys.reserve(steps_.size());
  for (auto& [key, step] : steps_) {
    did_work |= ProgressStep(step);
    keys.push_back(key);
  }
  for (const std::string& key : keys) did_work |= TryComplete(key);
  return did_work;
}

void NeighborExchange::Route(int from, NeighborEntry entry,
                             const std::shared_ptr<const std::vector<char>>& bytes) {
  FLOCK_LOG(kTrace, "neighbor") << "from rank " << from << ": entry type "
                                << static_cast<int>(entry.type) << " for '" << entry.name
                                << "' call " << entry.seq;
  const std::string key = Key(entry.name, entry.seq);
  auto it = steps_.find(key);
  if (it != steps_.end()) {
    Deliver(it->second, from, entry);
    return;
  }
  auto seq = next_seq_.find(entry.name);
  if (seq != next_seq_.end() && entry.seq < seq->second) {
    HandleStale(from, entry);  // this rank is past that step
    return;
  }
  mailbox_[key].push_back(Arrival{from, std::move(entry), bytes});
}

void NeighborExchange::Deliver(Step& step, int from, const NeighborEntry& entry) {
  switch (entry.type) {
    case NeighborEntryType::kData: DeliverData(step, from, entry); break;
    case NeighborEntryType::kExpect: DeliverExpect(step, from, entry); break;
    case NeighborEntryType::kReject: DeliverReject(step, from, entry); break;
  }
}

Status NeighborExchange::CheckShapes(const Step& step, int from, const NeighborEntry& entry,
                                     const std::vector<int64_t>& expected, const char* role) const {
  const Call& call = *step.call;
  const std::string who = "rank " + std::to_string(from) + " (" + role + ") and rank " +
                          std::to_string(rank_);
  if (entry.kind != static_cast<uint8_t>(call.request.op.kind)) {
    return Status::Mismatch(Describe(call) + ": " + who + " called different ops under this name");
  }
  if (entry.dtype != call.request.op.tensor.dtype) {
    return Status::Mismatch(Describe(call) + ": dtype differs between " + who + ": " +
                            DataTypeName(entry.dtype) + " vs " +
                            DataTypeName(call.request.op.tensor.dtype));
  }
  const bool gather = step.spec->mode == ExchangeStep::Mode::kGather;
  const bool same = gather ? entry.shape.size() == expected.size() &&
                                 std::equal(expected.begin() + 1, expected.end(),
                                            entry.shape.begin() + 1)
                           : entry.shape == expected;
  if (!same) {
    return Status::Mismatch(Describe(call) + ": shape differs between " + who + ": " +
                            ShapeToString(entry.shape) + " vs " + ShapeToString(expected) +
                            (gather ? " (only dim 0 may differ)" : ""));
  }
  return Status::OK();
}

void NeighborExchange::DeliverData(Step& step, int from, const NeighborEntry& entry) {
  Call& call = *step.call;
  auto it = std::find_if(step.in.begin(), step.in.end(), [&](const Incoming& in) {
    return in.spec->peer == from && !in.arrived;
  });
  if (it == step.in.end()) {
    std::vector<int> sources;
    for (const Incoming& in : step.in) sources.push_back(in.spec->peer);
    const Status status = Status::Mismatch(
        Describe(call) + ": rank " + std::to_string(from) + " sent its tensor to rank " +
        std::to_string(rank_) + ", which does not receive from it in this call (its sources: " +
        RankList(sources) + ")");
    if (step.status.ok()) step.status = status;
    QueueReject(from, step.match_name, call.seq, status);
    if (entry.lane_tag >= 0) DrainLane(from, entry);
    return;
  }
  Incoming& in = *it;
  in.arrived = true;
  Status checked = CheckShapes(step, from, entry, in.spec->shape, "sender");
  if (checked.ok() && entry.check != step.spec->check) {
    checked = Status::Mismatch(Describe(call) + ": enable_topo_check differs between rank " +
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
  const DataType dtype = call.request.op.tensor.dtype;
  const size_t elem = DataTypeSize(dtype);
  const int index = static_cast<int>(it - step.in.begin());
  char* lane_target = nullptr;
  switch (step.spec->mode) {
    case ExchangeStep::Mode::kReduce: {
      if (entry.lane_tag >= 0) {
        step.lane_queue.push_back(index);
        StartNextLane(step);
        return;
      }
      const double w = in.spec->weight * in.scale;
      if (w != 0.0 && step.status.ok()) {
        char* acc = static_cast<char*>(step.acc) +
                    in.spec->offset * DataTypeSize(AccumulatorType(dtype));
        step.status = WeightedAccumulate(acc, entry.payload, dtype, w, in.spec->count);
      }
      in.resolved = true;
      return;
    }
    case ExchangeStep::Mode::kPlace:
      lane_target = step.target + in.spec->offset * elem;
      break;
    case ExchangeStep::Mode::kGather:
      in.piece.resize(static_cast<size_t>(entry.payload_bytes));
      lane_target = in.piece.data();
      break;
  }
  if (entry.lane_tag < 0) {
    if (entry.payload_bytes > 0) std::memcpy(lane_target, entry.payload, entry.payload_bytes);
    in.resolved = true;
    return;
  }
  auto transfer = transport_.StartRecv(lane_target, entry.payload_bytes, from, entry.lane_tag,
                                       CommGroup::kNeighbor);
  if (transfer.ok()) {
    in.transfer = transfer.value();
  } else {
    FailPair(step, from, transfer.status());
  }
}

void NeighborExchange::StartNextLane(Step& step) {
  if (step.scratch_transfer >= 0 || step.lane_queue.empty()) return;
  const int index = step.lane_queue.front();
  step.lane_queue.pop_front();
  Incoming& in = step.in[static_cast<size_t>(index)];
  step.scratch.resize(static_cast<size_t>(in.bytes));
  auto transfer = transport_.StartRecv(step.scratch.data(), in.bytes, in.spec->peer, in.lane_tag,
                                       CommGroup::kNeighbor);
  if (!transfer.ok()) {
    FailPair(step, in.spec->peer, transfer.status());
    StartNextLane(step);
    return;
  }
  step.scratch_transfer = transfer.value();
  step.scratch_owner = index;
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
        RankList(destinations) + ")");
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
  const bool involved =
      std::any_of(step.in.begin(), step.in.end(),
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

void NeighborExchange::FailPair(Step& step, int peer, const Status& status) {
  if (step.status.ok()) step.status = status;
  QueueReject(peer, step.match_name, step.call->seq, status);
  for (Incoming& in : step.in) {
    if (in.spec->peer == peer && in.transfer < 0) in.resolved = true;
  }
  for (Outgoing& out : step.out) {
    if (out.spec->peer == peer) out.rejected = true;
  }
}

void NeighborExchange::HandleStale(int from, const NeighborEntry& entry) {
  switch (entry.type) {
    case NeighborEntryType::kData:
      FLOCK_LOG(kWarning, "neighbor")
          << "rank " << from << " sent '" << entry.name << "' (call " << entry.seq
          << ") after this rank's call ended without receiving from it; dropped";
      if (entry.lane_tag >= 0) DrainLane(from, entry);
      break;
    case NeighborEntryType::kExpect:
      QueueReject(from, entry.name, entry.seq,
                  Status::Mismatch("'" + entry.name + "': rank " + std::to_string(from) +
                                   " expects a tensor from rank " + std::to_string(rank_) +
                                   ", whose call (number " + std::to_string(entry.seq) +
                                   " of this name) ended without sending to it"));
      break;
    case NeighborEntryType::kReject: break;  // this rank's call ended already
  }
}

void NeighborExchange::DrainLane(int from, const NeighborEntry& entry) {
  auto buffer = std::make_unique<std::vector<char>>(static_cast<size_t>(entry.payload_bytes));
  auto transfer = transport_.StartRecv(buffer->data(), entry.payload_bytes, from, entry.lane_tag,
                                       CommGroup::kNeighbor);
  if (!transfer.ok()) {
    FLOCK_LOG(kError, "neighbor") << transfer.status().ToString();
    return;
  }
  discards_.push_back(Discard{transfer.value(), std::move(buffer)});
}

bool NeighborExchange::ProgressStep(Step& step) {
  bool did_work = false;
  const DataType dtype = step.call->request.op.tensor.dtype;
  if (step.scratch_transfer >= 0) {
    auto done = transport_.TestTransfer(step.scratch_transfer);
    if (!done.ok() || done.value()) {
      Incoming& in = step.in[static_cast<size_t>(step.scratch_owner)];
      step.scratch_transfer = -1;
      const double w = in.spec->weight * in.scale;
      if (!done.ok()) {
        FailPair(step, in.spec->peer, done.status());
      } else if (w != 0.0 && step.status.ok()) {
        char* acc = static_cast<char*>(step.acc) +
                    in.spec->offset * DataTypeSize(AccumulatorType(dtype));
        step.status = WeightedAccumulate(acc, step.scratch.data(), dtype, w, in.spec->count);
      }
      in.resolved = true;
      StartNextLane(step);
      if (step.scratch_transfer < 0) std::vector<char>().swap(step.scratch);  // free it early
      did_work = true;
    }
  }
  for (Incoming& in : step.in) {
    if (in.transfer < 0) continue;
    auto done = transport_.TestTransfer(in.transfer);
    if (!done.ok() || done.value()) {
      in.transfer = -1;
      in.resolved = true;
      if (!done.ok() && step.status.ok()) step.status = done.status();
      did_work = true;
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

bool NeighborExchange::TryComplete(const std::string& key) {
  auto it = steps_.find(key);
  if (it == steps_.end()) return false;
  Step& step = it->second;
  if (step.scratch_transfer >= 0 || !step.lane_queue.empty()) return false;
  for (const Incoming& in : step.in) {
    if (!in.resolved || in.transfer >= 0) return false;
  }
  for (const Outgoing& out : step.out) {
    if (out.lane >= 0) return false;  // its bytes are still being read
    if (!out.rejected && !(out.flushed && out.confirmed)) return false;
  }
  Status status = step.status.ok() ? FinishStep(step) : step.status;
  std::shared_ptr<Call> call = step.call;
  timeline_.End(call->request.op.name);
  FLOCK_LOG(kTrace, "neighbor") << "completed '" << step.match_name << "' call " << call->seq
                                << ": " << (status.ok() ? "ok" : status.ToString());
  steps_.erase(it);
  if (call->status.ok() && !status.ok()) call->status = status;
  // Later steps run even after a failure: their peers are waiting for them.
  if (call->next_step < call->request.op.steps->size()) {
    StartStep(call);
  } else {
    FinishCall(*call);
  }
  return true;
}

Status NeighborExchange::FinishStep(Step& step) {
  const ExchangeStep& spec = *step.spec;
  Call& call = *step.call;
  const DataType dtype = call.request.op.tensor.dtype;
  if (spec.mode == ExchangeStep::Mode::kReduce) {
    if (step.acc == step.target) return Status::OK();
    return StoreAccumulator(step.target, step.acc, dtype, spec.target_count);
  }
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
    if (!in.piece.empty()) std::memcpy(out->bytes.data() + offset, in.piece.data(), in.piece.size());
    offset += static_cast<int64_t>(in.piece.size());
  }
  call.gathered = std::move(out);
  return Status::OK();
}

void NeighborExchange::FinishCall(Call& call) {
  Status status = call.status;
  if (!status.ok() && status.message().rfind(Describe(call), 0) != 0 &&
      status.message().rfind("rank ", 0) != 0) {
    status = Status(status.code(), Describe(call) + ": " + status.message());
  }
  finish_(call.request, std::move(status), std::move(call.gathered));
}

void NeighborExchange::CheckStalls(double warn_s, double fail_s) {
  const auto now = Clock::now();
  std::vector<std::string> failed;
  for (auto& [key, step] : steps_) {
    const double waited = std::chrono::duration<double>(now - step.started).count();
    if (waited < warn_s && !(fail_s > 0 && waited >= fail_s)) continue;
    std::vector<int> missing;
    for (const Incoming& in : step.in)
      if (!in.resolved) missing.push_back(in.spec->peer);
    for (const Outgoing& out : step.out)
      if (!out.rejected && !(out.flushed && out.confirmed)) missing.push_back(out.spec->peer);
    if (!step.stall_warned && waited >= warn_s) {
      step.stall_warned = true;
      FLOCK_LOG(kWarning, "stall") << Describe(*step.call) << " (" << step.match_name
                                   << ") has waited " << static_cast<int>(waited)
                                   << " s for ranks " << RankList(missing);
    }
    if (fail_s > 0 && waited >= fail_s) {
      const Status status = Status::Aborted(
          Describe(*step.call) + " stalled for " + std::to_string(static_cast<int>(waited)) +
          " s waiting for ranks " + RankList(missing) + " (FLOCK_STALL_SHUTDOWN_S)");
      for (int peer : missing) FailPair(step, peer, status);
      failed.push_back(key);
    }
  }
  for (const std::string& key : failed) TryComplete(key);
}

void NeighborExchange::FailAll(const std::string& reason) {
  outbox_.clear();
  mailbox_.clear();
  std::vector<std::shared_ptr<Call>> calls;
  for (auto& [key, step] : steps_) {
    timeline_.End(step.call->request.op.name);
    calls.push_back(step.call);
  }
  steps_.clear();
  for (auto& call : calls) finish_(call->request, Status::Aborted(reason), nullptr);
}

}  // namespace flock
