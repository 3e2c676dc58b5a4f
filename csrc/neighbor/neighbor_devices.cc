// Neighbor ops on the device path as the host path sees them (DeviceCalls),
// and what a withdrawn call — ranks that disagree on its device — does here.
#include "flock/common/logging.h"
#include "flock/neighbor/neighbor_exchange.h"
#include "flock/neighbor/op_steps.h"

namespace flock {

Status NeighborExchange::AddDeviceCall(PendingRequest& request) {
  const OpRequest& op = request.op;
  const std::string match_name = NeighborMatchName(op);
  const int64_t seq = call_numbers_[match_name]++;
  request.neighbor_call = seq;
  Status withdrawn = device_calls_.TakeOwed(match_name, seq);
  if (!withdrawn.ok()) {
    MarkCallDone(match_name, seq, op.kind);
    return withdrawn;
  }
  std::vector<std::string> keys;
  for (const std::string& suffix : StepSuffixes(op.kind))
    keys.push_back(Key(match_name + suffix, seq));
  device_calls_.Begin(op, seq, keys);
  // What peers on the host path sent for this call before this rank got here.
  for (const std::string& suffix : StepSuffixes(op.kind)) {
    for (Arrival& a : mailbox_.Take(match_name + suffix, seq)) {
      device_calls_.Intercept(Key(match_name + suffix, seq), a.from);
      if (a.entry.type == NeighborEntryType::kData && a.entry.lane_tag >= 0)
        DrainLane(a.from, a.entry);
    }
  }
  return Status::OK();
}

void NeighborExchange::EndDeviceCall(const PendingRequest& request) {
  const std::string match_name = NeighborMatchName(request.op);
  device_calls_.End(match_name, request.neighbor_call);
  MarkCallDone(match_name, request.neighbor_call, request.op.kind);
}

void NeighborExchange::MarkCallDone(const std::string& match_name, int64_t seq, OpKind kind) {
  for (const std::string& suffix : StepSuffixes(kind)) {
    mailbox_.MarkDone(match_name + suffix, seq);
    for (Arrival& a : mailbox_.Take(match_name + suffix, seq)) HandleStale(a.from, a.entry);
  }
}

void NeighborExchange::Withdraw(const std::string& match_name, int64_t call, const Status& status) {
  auto next = call_numbers_.find(match_name);
  if (next == call_numbers_.end() || call >= next->second) {
    device_calls_.Owe(match_name, call, status);
    return;
  }
  // Its steps on the host path, if any is still running: every peer got the
  // same answer, so each side gives up its open pairs without telling the other.
  std::vector<std::string> keys;
  for (const auto& [key, step] : steps_) {
    if (step.call->match_name == match_name && step.call->seq == call) keys.push_back(key);
  }
  for (const std::string& key : keys) {
    Step& step = steps_.at(key);
    for (int peer : OpenPeers(step)) AbandonPair(step, peer, status);
    FLOCK_LOG(kDebug, "neighbor") << "'" << step.match_name << "' call " << call
                                  << " withdrawn by rank 0: " << status.message();
    TryComplete(key);
  }
}

}  // namespace flock
