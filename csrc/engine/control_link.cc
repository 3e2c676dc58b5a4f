#include "flock/engine/control_link.h"

#include <string>
#include <utility>

namespace flock {

ControlLink::ControlLink(Transport& transport, Coordinator* coordinator, EngineCounters& counters,
                         CoordinatorService::FailFn fail)
    : transport_(transport),
      rank_(transport.rank(CommGroup::kControl)),
      coordinator_(coordinator),
      counters_(counters),
      fail_(std::move(fail)) {
  if (coordinator_ != nullptr)
    service_ = std::make_unique<CoordinatorService>(transport, *coordinator_, counters, fail_);
}

void ControlLink::Announce(const std::vector<ReadyEntry>& entries) {
  if (coordinator_ != nullptr) {
    Status s = coordinator_->AddReady(0, entries, Clock::now());
    if (!s.ok()) coordinator_->Break("rank 0 refused its own announcement: " + s.message());
    return;
  }
  std::vector<char> bytes = EncodeReady(entries);
  counters_.control_bytes += static_cast<int64_t>(bytes.size());
  Status s = transport_.PostSend(std::move(bytes), 0, kReadyTag, CommGroup::kControl);
  if (!s.ok()) fail_(s, "announcing requests to rank 0");
}

void ControlLink::AnnounceShutdown(const std::vector<int>& stalled, bool coordinator_lost) {
  if (coordinator_ != nullptr) {
    coordinator_->AddShutdown(0, stalled);
    return;
  }
  Status s = transport_.PostSend(EncodeShutdown(stalled), 0, kShutdownTag, CommGroup::kControl);
  if (!s.ok() && !coordinator_lost) fail_(s, "telling rank 0 of this rank's shutdown");
}

void ControlLink::Withdraw(const Withdrawal& withdrawal) {
  if (coordinator_ != nullptr) {
    coordinator_->Withdraw(withdrawal);
    return;
  }
  std::vector<char> bytes = EncodeWithdrawal(withdrawal);
  counters_.control_bytes += static_cast<int64_t>(bytes.size());
  Status s = transport_.PostSend(std::move(bytes), 0, kWithdrawTag, CommGroup::kControl);
  if (!s.ok()) fail_(s, "telling rank 0 of a call that cannot run");
}

Result<bool> ControlLink::Poll(std::vector<Response>* answers) {
  answers->clear();
  if (service_ == nullptr) return PollResponses(answers);
  const bool did_work = service_->Poll(answers);
  if (!answers->empty()) ++counters_.response_messages;
  return did_work;
}

Result<bool> ControlLink::PollResponses(std::vector<Response>* answers) {
  bool did_work = false;
  int from = 0;
  while (true) {
    auto got = transport_.TryReceive(0, kResponseTag, CommGroup::kControl, &from, &bytes_);
    if (!got.ok()) {
      fail_(got.status(), "receiving rank 0's answers");
      return true;
    }
    if (!got.value()) return did_work;
    last_heard_ = Clock::now();
    ++counters_.response_messages;
    did_work = true;
    auto responses = DecodeResponses(bytes_);
    if (!responses.ok()) {
      return Status::Internal("rank " + std::to_string(rank_) +
                              " could not read an answer of rank 0 (" +
                              responses.status().message() + "); ending the job");
    }
    for (Response& r : responses.value()) answers->push_back(std::move(r));
  }
}

}  // namespace flock
