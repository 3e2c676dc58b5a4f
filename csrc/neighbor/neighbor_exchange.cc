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

bool Reduces(const PendingRequest& r) {
  return r.op.kind == OpKind::kNeighborAllreduce;
}

// An allgather sends a 0-d tensor as one row.
std::vector<int64_t> WireShape(const PendingRequest& r) {
  std::vector<int64_t> shape = r.op.tensor.shape;
  if (!Reduces(r) && shape.empty()) shape = {1};
  return shape;
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

std::string NeighborExchange::Describe(const Call& call) const {
  return std::string(OpKindName(call.request.op.kind)) + " '" + call.request.op.name + "'";
}

void NeighborExchange::Add(PendingRequest request) {
  const OpRequest& op = request.op;
  const std::string match_name =
      op.auto_named ? std::string(OpKindName(op.kind)) + ".*" : op.name;
  const int64_t seq = next_seq_[match_name]++;
  const std::string key = Key(match_name, seq);

  if (!op.local_status.ok() || op.neighbor == nullptr) {
    // Rejected here: tell the ranks this call would have talked to, so they
    // fail it instead of waiting for this rank.
    Status status = op.local_status.ok() ? Status::Internal("neighbor op without a plan")
                                         : op.local_status;
    const Status told(status.code(), "rank " + std::to_string(rank_) + " rejected its " +
                                         OpKindName(op.kind) + " '" + op.name +
                                         "': " + status.message());
    for (int peer : op.notify_on_reject) QueueReject(peer, match_name, seq, told);
    auto pending = mailbox_.find(key);
    if (pending != mailbox_.end()) {
      std::vector<Arrival> arrivals = std::move(pending->second);
      mailbox_.erase(pending);
      for (Arrival& a : arrivals) HandleStale(a.from, a.entry);
    }
    finish_(request, Status(status.code(), std::string(OpKindName(op.kind)) + " '" + op.name +
                                               "': " + status.message()),
            nullptr);
    return;
  }

  Call& call = calls_[key];
  call.request = std::move(request);
  call.match_name = match_name;
  call.seq = seq;
  call.started = Clock::now();
  const PendingRequest& r = call.request;
  const NeighborPlan& plan = *r.op.neighbor;
  const DataType dtype = r.op.tensor.dtype;
  call.count = r.op.tensor.num_elements();
  timeline_.Begin(r.op.name, "COMMUNICATE");

  if (Reduces(r)) {
    // The sum builds up in the output itself unless it must not be touched
    // before the sends are done (in place) or needs a wider type.
    const bool in_place = r.output.data == r.op.tensor.data;
    if (AccumulatorType(dtype) == dtype && !in_place) {
      call.acc = r.output.data;
    } else {
      call.acc_storage.resize(static_cast<size_t>(call.count) *
                              DataTypeSize(AccumulatorType(dtype)));
      call.acc = call.acc_storage.data();
    }
    call.status = WeightedStore(call.acc, r.op.tensor.data, dtype, plan.self_weight, call.count);
  }
  for (const NeighborRecv& recv : plan.recvs) {
    Incoming in;
    in.peer = recv.peer;
    in.weight = recv.weight;
    call.in.push_back(std::move(in));
  }
  const int64_t bytes = r.op.tensor.size_bytes();
  const std::vector<int64_t> shape = WireShape(r);
  for (const NeighborSend& send : plan.sends) {
    Outgoing out;
    out.peer = send.peer;
    out.scale = send.scale;
    out.confirmed = !plan.check;
    call.out.push_back(out);
    Outbound ob;
    ob.entry.type = NeighborEntryType::kData;
    ob.entry.name = match_name;
    ob.entry.seq = seq;
    ob.entry.kind = static_cast<uint8_t>(r.op.kind);
    ob.entry.dtype = dtype;
    ob.entry.shape = shape;
    ob.entry.scale = send.scale;
    ob.entry.check = plan.check;
    ob.entry.payload_bytes = bytes;
    ob.entry.payload = static_cast<const char*>(r.op.tensor.data);
    ob.entry.lane_tag = bytes > options_.inline_limit_bytes ? 0 : -1;  // the tag comes at flush
    ob.call_key = key;
    ob.out_index = static_cast<int>(call.out.size()) - 1;
    Queue(send.peer, std::move(ob));
  }
  if (plan.check) {
    for (const NeighborRecv& recv : plan.recvs) {
      Outbound ob;
      ob.entry.type = NeighborEntryType::kExpect;
      ob.entry.name = match_name;
      ob.entry.seq = seq;
      ob.entry.kind = static_cast<uint8_t>(r.op.kind);
      ob.entry.dtype = dtype;
      ob.entry.shape = shape;
      Queue(recv.peer, std::move(ob));
    }
  }

  auto pending = mailbox_.find(key);
  if (pending != mailbox_.end()) {
    std::vector<Arrival> arrivals = std::move(pending->second);
    mailbox_.erase(pending);
    for (Arrival& a : arrivals) Deliver(call, a.from, a.entry);
  }
  FLOCK_LOG(kTrace, "neighbor") << "added '" << match_name << "' call " << seq << " ("
                                << call.in.size() << " sources, " << call.out.size()
                                << " destinations)";
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
    // Drop data for calls that ended or whose pair already failed.
    std::vector<Outbound> live;
    for (Outbound& ob : outbounds) {
      if (ob.entry.type == NeighborEntryType::kData) {
        auto it = calls_.find(ob.call_key);
        if (it == calls_.end() || it->second.out[ob.out_index].rejected) continue;
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
        const int64_t add = e.type == NeighborEntryType::kData && e.lane_tag < 0 ? e.payload_bytes : 0;
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
        Call& call = calls_.at(ob.call_key);
        Outgoing& out = call.out[ob.out_index];
        out.flushed = true;
        if (ob.entry.lane_tag >= 0) {
          ++counters_.neighbor_lanes;
          auto lane = transport_.StartSend(ob.entry.payload, ob.entry.payload_bytes, peer,
                                           ob.entry.lane_tag, CommGroup::kNeighbor);
          if (lane.ok()) {
            out.lane = lane.value();
          } else {
            FailPair(call, peer, lane.status());
          }
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
  keys.reserve(calls_.size());
  for (auto& [key, call] : calls_) {
    did_work |= ProgressCall(call);
    keys.push_back(key);
  }
  for (const std::string& key : keys) did_work |= TryComplete(key);
  return did_work;
}

void NeighborExchange::Route(int from, NeighborEntry entry,
                             const std::shared_ptr<const std::vector<char>>& bytes) {
  const std::string key = Key(entry.name, entry.seq);
  FLOCK_LOG(kTrace, "neighbor") << "from rank " << from << ": entry type "
                                << static_cast<int>(entry.type) << " for '" << entry.name
                                << "' call " << entry.seq;
  auto it = calls_.find(key);
  if (it != calls_.end()) {
    Deliver(it->second, from, entry);
    return;
  }
  auto seq = next_seq_.find(entry.name);
  if (seq != next_seq_.end() && entry.seq < seq->second) {
    HandleStale(from, entry);  // this rank's call has already ended
    return;
  }
  mailbox_[key].push_back(Arrival{from, std::move(entry), bytes});
}

void NeighborExchange::Deliver(Call& call, int from, const NeighborEntry& entry) {
  switch (entry.type) {
    case NeighborEntryType::kData: DeliverData(call, from, entry); break;
    case NeighborEntryType::kExpect: DeliverExpect(call, from, entry); break;
    case NeighborEntryType::kReject: DeliverReject(call, from, entry); break;
  }
}

Status NeighborExchange::CheckPeerTensor(const Call& call, int from, const NeighborEntry& entry,
                                         const char* role) const {
  const PendingRequest& r = call.request;
  const std::string who = "rank " + std::to_string(from) + " (" + role + ") and rank " +
                          std::to_string(rank_);
  if (entry.kind != static_cast<uint8_t>(r.op.kind)) {
    return Status::Mismatch(Describe(call) + ": " + who + " called different ops under this name");
  }
  if (entry.dtype != r.op.tensor.dtype) {
    return Status::Mismatch(Describe(call) + ": dtype differs between " + who + ": " +
                            DataTypeName(entry.dtype) + " vs " + DataTypeName(r.op.tensor.dtype));
  }
  const std::vector<int64_t> mine = WireShape(r);
  const bool same = Reduces(r) ? entry.shape == mine
                               : entry.shape.size() == mine.size() &&
                                     std::equal(mine.begin() + 1, mine.end(), entry.shape.begin() + 1);
  if (!same) {
    return Status::Mismatch(Describe(call) + ": shape differs between " + who + ": " +
                            ShapeToString(entry.shape) + " vs " + ShapeToString(mine) +
                            (Reduces(r) ? "" : " (only dim 0 may differ)"));
  }
  return Status::OK();
}

void NeighborExchange::DeliverData(Call& call, int from, const NeighborEntry& entry) {
  auto it = std::find_if(call.in.begin(), call.in.end(),
                         [&](const Incoming& in) { return in.peer == from && !in.arrived; });
  if (it == call.in.end()) {
    std::vector<int> sources;
    for (const Incoming& in : call.in) sources.push_back(in.peer);
    const Status status = Status::Mismatch(
        Describe(call) + ": rank " + std::to_string(from) + " sent its tensor to rank " +
        std::to_string(rank_) + ", which does not receive from it in this call (its sources: " +
        RankList(sources) + ")");
    if (call.status.ok()) call.status = status;
    QueueReject(from, call.match_name, call.seq, status);
    if (entry.lane_tag >= 0) DrainLane(from, entry);
    return;
  }
  Incoming& in = *it;
  in.arrived = true;
  Status checked = CheckPeerTensor(call, from, entry, "sender");
  if (checked.ok() && entry.check != call.request.op.neighbor->check) {
    checked = Status::Mismatch(Describe(call) + ": enable_topo_check differs between rank " +
                               std::to_string(from) + " and rank " + std::to_string(rank_));
  }
  if (!checked.ok()) {
    if (entry.lane_tag >= 0) DrainLane(from, entry);
    FailPair(call, from, checked);
    return;
  }
  in.scale = entry.scale;
  in.bytes = entry.payload_bytes;
  in.lane_tag = entry.lane_tag;
  in.shape = entry.shape;
  const int index = static_cast<int>(it - call.in.begin());
  if (Reduces(call.request)) {
    if (entry.lane_tag >= 0) {
      call.lane_queue.push_back(index);
      StartNextLane(call);
      return;
    }
    const double w = in.weight * in.scale;
    if (w != 0.0 && call.status.ok()) {
      call.status = WeightedAccumulate(call.acc, entry.payload, call.request.op.tensor.dtype, w,
                                       call.count);
    }
    in.resolved = true;
    return;
  }
  in.piece.resize(static_cast<size_t>(entry.payload_bytes));
  if (entry.lane_tag < 0) {
    if (entry.payload_bytes > 0) std::memcpy(in.piece.data(), entry.payload, in.piece.size());
    in.resolved = true;
    return;
  }
  auto transfer = transport_.StartRecv(in.piece.data(), entry.payload_bytes, from, entry.lane_tag,
                                       CommGroup::kNeighbor);
  if (transfer.ok()) {
    in.transfer = transfer.value();
  } else {
    FailPair(call, from, transfer.status());
  }
}

void NeighborExchange::StartNextLane(Call& call) {
  if (call.scratch_transfer >= 0 || call.lane_queue.empty()) return;
  const int index = call.lane_queue.front();
  call.lane_queue.pop_front();
  Incoming& in = call.in[static_cast<size_t>(index)];
  call.scratch.resize(static_cast<size_t>(in.bytes));
  auto transfer = transport_.StartRecv(call.scratch.data(), in.bytes, in.peer, in.lane_tag,
                                       CommGroup::kNeighbor);
  if (!transfer.ok()) {
    FailPair(call, in.peer, transfer.status());
    StartNextLane(call);
    return;
  }
  call.scratch_transfer = transfer.value();
  call.scratch_owner = index;
}

void NeighborExchange::DeliverExpect(Call& call, int from, const NeighborEntry& entry) {
  auto it = std::find_if(call.out.begin(), call.out.end(),
                         [&](const Outgoing& out) { return out.peer == from; });
  if (it == call.out.end()) {
    std::vector<int> destinations;
    for (const Outgoing& out : call.out) destinations.push_back(out.peer);
    const Status status = Status::Mismatch(
        Describe(call) + ": rank " + std::to_string(from) + " expects a tensor from rank " +
        std::to_string(rank_) + ", which does not send to it in this call (its destinations: " +
        RankList(destinations) + ")");
    if (call.status.ok()) call.status = status;
    QueueReject(from, call.match_name, call.seq, status);
    return;
  }
  const Status checked = CheckPeerTensor(call, from, entry, "receiver");
  if (!checked.ok()) {
    FailPair(call, from, checked);
    return;
  }
  it->confirmed = true;
}

void NeighborExchange::DeliverReject(Call& call, int from, const NeighborEntry& entry) {
  const bool involved =
      std::any_of(call.in.begin(), call.in.end(), [&](const Incoming& in) { return in.peer == from; }) ||
      std::any_of(call.out.begin(), call.out.end(), [&](const Outgoing& o) { return o.peer == from; });
  if (!involved) return;  // a rejected call told its static neighbours; this call is not about it
  const Status status(entry.code, entry.message);
  if (call.status.ok()) call.status = status;
  for (Incoming& in : call.in) {
    // A lane already announced still arrives and is reduced or drained as usual.
    if (in.peer == from && !in.arrived) in.resolved = true;
  }
  for (Outgoing& out : call.out) {
    if (out.peer == from) out.rejected = true;
  }
}

void NeighborExchange::FailPair(Call& call, int peer, const Status& status) {
  if (call.status.ok()) call.status = status;
  QueueReject(peer, call.match_name, call.seq, status);
  for (Incoming& in : call.in) {
    if (in.peer == peer && in.transfer < 0) in.resolved = true;
  }
  for (Outgoing& out : call.out) {
    if (out.peer == peer) out.rejected = true;
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

bool NeighborExchange::ProgressCall(Call& call) {
  bool did_work = false;
  if (call.scratch_transfer >= 0) {
    auto done = transport_.TestTransfer(call.scratch_transfer);
    if (!done.ok() || done.value()) {
      Incoming& in = call.in[static_cast<size_t>(call.scratch_owner)];
      call.scratch_transfer = -1;
      if (!done.ok()) {
        FailPair(call, in.peer, done.status());
      } else if (in.weight * in.scale != 0.0 && call.status.ok()) {
        call.status = WeightedAccumulate(call.acc, call.scratch.data(), call.request.op.tensor.dtype,
                                         in.weight * in.scale, call.count);
      }
      in.resolved = true;
      StartNextLane(call);
      if (call.scratch_transfer < 0) std::vector<char>().swap(call.scratch);  // free it early
      did_work = true;
    }
  }
  for (Incoming& in : call.in) {
    if (in.transfer < 0) continue;
    auto done = transport_.TestTransfer(in.transfer);
    if (!done.ok() || done.value()) {
      in.transfer = -1;
      in.resolved = true;
      if (!done.ok() && call.status.ok()) call.status = done.status();
      did_work = true;
    }
  }
  for (Outgoing& out : call.out) {
    if (out.lane < 0) continue;
    auto done = transport_.TestTransfer(out.lane);
    if (!done.ok() || done.value()) {
      out.lane = -2;  // done
      if (!done.ok() && call.status.ok()) call.status = done.status();
      did_work = true;
    }
  }
  return did_work;
}

bool NeighborExchange::TryComplete(const std::string& key) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return false;
  Call& call = it->second;
  if (call.scratch_transfer >= 0 || !call.lane_queue.empty()) return false;
  for (const Incoming& in : call.in) {
    if (!in.resolved || in.transfer >= 0) return false;
  }
  for (const Outgoing& out : call.out) {
    if (out.lane >= 0) return false;  // its bytes are still being read
    if (!out.rejected && !(out.flushed && out.confirmed)) return false;
  }
  std::shared_ptr<GatheredTensor> gathered;
  Status status = call.status;
  if (status.ok()) status = Finalize(call, &gathered);
  timeline_.End(call.request.op.name);  // COMMUNICATE
  FLOCK_LOG(kTrace, "neighbor") << "completed '" << call.match_name << "' call " << call.seq
                                << ": " << (status.ok() ? "ok" : status.ToString());
  PendingRequest request = std::move(call.request);
  calls_.erase(it);
  finish_(request, std::move(status), std::move(gathered));
  return true;
}

Status NeighborExchange::Finalize(Call& call, std::shared_ptr<GatheredTensor>* gathered) {
  const PendingRequest& r = call.request;
  if (Reduces(r)) {
    if (call.acc == r.output.data) return Status::OK();
    return StoreAccumulator(r.output.data, call.acc, r.op.tensor.dtype, call.count);
  }
  auto out = std::make_shared<GatheredTensor>();
  out->dtype = r.op.tensor.dtype;
  out->shape = WireShape(r);
  int64_t rows = 0, total = 0;
  for (const Incoming& in : call.in) {
    rows += in.shape.empty() ? 1 : in.shape[0];
    total += static_cast<int64_t>(in.piece.size());
  }
  out->shape[0] = rows;
  out->bytes.resize(static_cast<size_t>(total));
  int64_t offset = 0;
  for (const Incoming& in : call.in) {
    if (!in.piece.empty()) std::memcpy(out->bytes.data() + offset, in.piece.data(), in.piece.size());
    offset += static_cast<int64_t>(in.piece.size());
  }
  *gathered = std::move(out);
  return Status::OK();
}

void NeighborExchange::CheckStalls(double warn_s, double fail_s) {
  const auto now = Clock::now();
  std::vector<std::string> failed;
  for (auto& [key, call] : calls_) {
    const double waited = std::chrono::duration<double>(now - call.started).count();
    if (waited < warn_s && !(fail_s > 0 && waited >= fail_s)) continue;
    std::vector<int> missing;
    for (const Incoming& in : call.in)
      if (!in.resolved) missing.push_back(in.peer);
    for (const Outgoing& out : call.out)
      if (!out.rejected && !(out.flushed && out.confirmed)) missing.push_back(out.peer);
    if (!call.stall_warned && waited >= warn_s) {
      call.stall_warned = true;
      FLOCK_LOG(kWarning, "stall") << Describe(call) << " has waited " << static_cast<int>(waited)
                                   << " s for ranks " << RankList(missing);
    }
    if (fail_s > 0 && waited >= fail_s) {
      const Status status = Status::Aborted(
          Describe(call) + " stalled for " + std::to_string(static_cast<int>(waited)) +
          " s waiting for ranks " + RankList(missing) + " (FLOCK_STALL_SHUTDOWN_S)");
      for (int peer : missing) FailPair(call, peer, status);
      failed.push_back(key);
    }
  }
  for (const std::string& key : failed) TryComplete(key);
}

void NeighborExchange::FailAll(const std::string& reason) {
  outbox_.clear();
  mailbox_.clear();
  std::vector<std::string> keys;
  for (auto& [key, call] : calls_) keys.push_back(key);
  for (const std::string& key : keys) {
    Call& call = calls_.at(key);
    timeline_.End(call.request.op.name);
    PendingRequest request = std::move(call.request);
    calls_.erase(key);
    finish_(request, Status::Aborted(reason), nullptr);
  }
}

}  // namespace flock
