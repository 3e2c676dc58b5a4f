// When a pair of ranks cannot finish a step together: a failed pair, a stall,
// and shutdown (a departing rank's goodbye, after which nothing waits for it).
#include <algorithm>
#include <chrono>

#include "flock/common/logging.h"
#include "flock/common/text.h"
#include "flock/neighbor/neighbor_exchange.h"

namespace flock {

void NeighborExchange::FailPair(Step& step, int peer, const Status& status) {
  QueueReject(peer, step.match_name, step.call->seq, status);
  AbandonPair(step, peer, status);
}

void NeighborExchange::AbandonPair(Step& step, int peer, const Status& status) {
  if (step.status.ok()) step.status = status;
  for (Incoming& in : step.in) {
    // A lane already announced still arrives and is reduced or drained as usual.
    if (in.spec->peer == peer && in.transfer < 0) in.resolved = true;
  }
  for (Outgoing& out : step.out) {
    if (out.spec->peer == peer) out.rejected = true;
  }
}

// A later step of a failed call would send what it built from the failed
// step's incomplete result (a hierarchical op's machine mean without a
// stopped rank's part), and its peers would take that for a good result. So
// each of its peers gets a reject naming the cause instead, and fails its call
// now rather than waiting for this rank.
void NeighborExchange::RejectLaterSteps(Call& call) {
  const std::vector<ExchangeStep>& steps = *call.request.op.steps;
  const std::string self = Describe(call);
  std::string cause = call.status.message();  // without a leading "<op> '<name>': "
  const size_t after_self = cause.find_first_not_of(": ", self.size());
  if (cause.rfind(self, 0) == 0 && after_self != std::string::npos) cause.erase(0, after_self);
  const Status status(call.status.code(),
                      self + ": rank " + std::to_string(rank_) +
                          " dropped out of this call after an earlier step failed: " + cause);
  for (; call.next_step < steps.size(); ++call.next_step) {
    const ExchangeStep& spec = steps[call.next_step];
    const std::string name = call.match_name + spec.suffix;
    mailbox_.MarkDone(name, call.seq);
    std::vector<int> peers;
    for (const StepSend& send : spec.sends) peers.push_back(send.peer);
    for (const StepRecv& recv : spec.recvs) peers.push_back(recv.peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    for (int peer : peers) QueueReject(peer, name, call.seq, status);
    for (Arrival& a : mailbox_.Take(name, call.seq)) HandleStale(a.from, a.entry);
  }
}

std::vector<int> NeighborExchange::OpenPeers(const Step& step) {
  std::vector<int> peers;
  for (const Incoming& in : step.in)
    if (!in.resolved && !in.arrived) peers.push_back(in.spec->peer);
  for (const Outgoing& out : step.out)
    if (!out.rejected && !(out.flushed && out.confirmed)) peers.push_back(out.spec->peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

// A later step of a call (the hierarchical op's machine and gather steps)
// waits for peers that first had to finish their own earlier steps under the
// same limit: it waits this much longer per step, so that a failure there
// reaches it first (RejectLaterSteps) and its error names the rank that
// failed, not a peer held up by it. More than the engine's stall check period.
constexpr double kLaterStepGraceS = 0.5;

std::vector<int> NeighborExchange::CheckStalls(double warn_s, double fail_s) {
  const auto now = Clock::now();
  std::vector<std::string> failed;
  std::vector<int> stalled_peers;
  for (auto& [key, step] : steps_) {
    const double waited = std::chrono::duration<double>(now - step.started).count();
    const double limit =
        fail_s > 0 ? fail_s + kLaterStepGraceS * static_cast<double>(step.call->next_step - 1) : 0;
    if (waited < warn_s && !(limit > 0 && waited >= limit)) continue;
    const std::vector<int> missing = OpenPeers(step);
    if (!step.stall_warned && waited >= warn_s) {
      step.stall_warned = true;
      FLOCK_LOG(kWarning, "stall")
          << Describe(*step.call) << " (" << step.match_name << ") has waited "
          << static_cast<int>(waited) << " s for ranks " << BracketedList(missing);
    }
    if (limit > 0 && waited >= limit) {
      const Status status = Status::Aborted(
          Describe(*step.call) + " stalled for " + std::to_string(static_cast<int>(waited)) +
          " s waiting for ranks " + BracketedList(missing) + " (FLOCK_STALL_SHUTDOWN_S)");
      for (int peer : missing) FailPair(step, peer, status);
      stalled_peers.insert(stalled_peers.end(), missing.begin(), missing.end());
      failed.push_back(key);
    }
  }
  for (const std::string& key : failed) TryComplete(key);
  return stalled_peers;
}

void NeighborExchange::Depart() {
  if (departed_) return;
  const Status why = Status::Aborted("flock was shut down on rank " + std::to_string(rank_) +
                                     " while this call was in flight");
  for (auto& [key, step] : steps_) {
    for (int peer : OpenPeers(step)) AbandonPair(step, peer, why);
  }
  // Early arrivals for calls this rank will never make: their lanes must still be read.
  for (const Arrival& a : mailbox_.TakeAll()) {
    if (a.entry.type == NeighborEntryType::kData && a.entry.lane_tag >= 0)
      DrainLane(a.from, a.entry);
  }
  // The goodbye goes after everything already queued, so a peer that reads it
  // has read all this rank ever sent it; nothing is sent after it.
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    Outbound ob;
    ob.entry.type = NeighborEntryType::kGoodbye;
    Queue(peer, std::move(ob));
  }
  Flush(true);
  departed_ = true;
  TryCompleteAll();  // steps with transfers in flight end when those do
}

void NeighborExchange::OnGoodbye(int from) {
  gone_.insert(from);
  for (auto& [key, step] : steps_) {
    const std::vector<int> open = OpenPeers(step);
    if (std::find(open.begin(), open.end(), from) == open.end()) continue;
    AbandonPair(step, from,
                Status::Aborted(Describe(*step.call) + ": rank " + std::to_string(from) +
                                " shut down before its part of this call with rank " +
                                std::to_string(rank_)));
  }
  TryCompleteAll();
}

void NeighborExchange::Abandon(const std::string& reason) {
  std::vector<std::shared_ptr<Call>> calls;
  for (auto& [key, step] : steps_) {
    timeline_.End(step.call->request.op.name);
    calls.push_back(step.call);
  }
  steps_.clear();
  moving_.clear();
  lanes_.Clear();
  queued_receives_.clear();
  budgeted_.clear();
  for (auto& call : calls) finish_(call->request, Status::Aborted(reason), nullptr);
}

// A message from `peer` that cannot be decoded: what it carried is lost, so
// every call with that peer fails on both sides (the rejects name the call), now
// and later: nothing from it can be trusted to line up any more.
void NeighborExchange::MarkUnreadable(int peer, const Status& status) {
  const std::string why = "rank " + std::to_string(rank_) + " could not read a message of rank " +
                          std::to_string(peer) + " (" + status.message() + ")";
  FLOCK_LOG(kError, "neighbor") << why;
  unreadable_.emplace(peer, why);
  for (auto& [key, step] : steps_) {
    const std::vector<int> open = OpenPeers(step);
    if (std::find(open.begin(), open.end(), peer) == open.end()) continue;
    FailPair(step, peer, Status::Internal(Describe(*step.call) + ": " + why));
  }
  TryCompleteAll();
}

void NeighborExchange::NoteTransportFailure(const Status& status) {
  if (transport_failure_.ok()) transport_failure_ = status;
}

Status NeighborExchange::TakeTransportFailure() {
  Status failure = std::move(transport_failure_);
  transport_failure_ = Status::OK();
  return failure;
}

bool NeighborExchange::done() const {
  return departed_ && steps_.empty() && discards_.empty() &&
         static_cast<int>(gone_.size()) == size_ - 1;
}

}  // namespace flock
