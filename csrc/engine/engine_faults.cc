// What the engine does when something goes wrong: stalls (FLOCK_STALL_*), a
// coordinator that stopped answering, a control plane that cannot be trusted,
// a transport that failed. Never log-and-continue: the requests affected fail
// on every rank concerned, or the job ends (MPI_Abort) where other ranks
// could otherwise wait forever. docs/errors.md lists each case.
#include <algorithm>
#include <cmath>

#include "flock/common/logging.h"
#include "flock/engine/engine.h"

namespace flock {
namespace {

// Stalls are checked this often, so an op fails within a quarter second of
// FLOCK_STALL_SHUTDOWN_S (warnings still come once a second).
constexpr double kStallCheckPeriodS = 0.25;
// Rank 0's verdict on a stall leaves it within a check period of the limit: a
// rank that heard nothing from it this long past FLOCK_STALL_SHUTDOWN_S takes
// it for stopped or hung (half a second left for the verdict to arrive).
constexpr double kCoordinatorGraceS = 0.75;

double SecondsSince(Clock::time_point then, Clock::time_point now) {
  return std::chrono::duration<double>(now - then).count();
}

}  // namespace

// Every kStallCheckPeriodS. Rank 0 (the coordinator) warns about names some
// ranks submitted and others not after FLOCK_STALL_WARNING_S (once a second),
// and fails them after FLOCK_STALL_SHUTDOWN_S, each on its own clock. The
// other ranks watch the coordinator itself (CheckCoordinatorSilence).
void Engine::CheckStalls() {
  const auto now = Clock::now();
  const double since_last_check = SecondsSince(last_stall_check_, now);
  if (since_last_check < kStallCheckPeriodS) return;
  last_stall_check_ = now;
  CheckShutdownWait(now);
  if (rank_ != 0) {
    CheckCoordinatorSilence(now);
    return;
  }
  const double warn = config_.stall_warning_s, fail = config_.stall_shutdown_s;
  for (const Stall& stall : coordinator_->FindStalls(now, fail > 0 ? std::min(warn, fail) : warn)) {
    std::string ready, missing;
    for (int r : stall.ready_ranks) ready += (ready.empty() ? "" : ", ") + std::to_string(r);
    for (int r : stall.missing_ranks) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    // Once a second: when the stall first passes the warning period, then
    // whenever its age passes a whole second.
    const double before = stall.seconds - since_last_check;
    const bool warn_now = before < warn || std::floor(stall.seconds) > std::floor(before);
    if (stall.seconds >= warn && warn_now) {
      FLOCK_LOG(kWarning, "stall")
          << "'" << stall.name << "' has waited " << static_cast<int>(stall.seconds)
          << " s: submitted by ranks " << ready << " but not by ranks " << missing;
    }
    if (fail > 0 && stall.seconds >= fail) {
      coordinator_->FailStalled({stall}, "'" + stall.name + "' stalled for " +
                                             std::to_string(static_cast<int>(stall.seconds)) +
                                             " s: ranks " + missing +
                                             " never submitted it (FLOCK_STALL_SHUTDOWN_S)");
    }
  }
}

// A rank other than 0 whose global op has waited past FLOCK_STALL_SHUTDOWN_S
// with no word from rank 0 meanwhile: rank 0 would have failed a stall by now,
// so it is stopped or hung. Its ops fail, and so do later global ops on this
// rank (the coordinator's state is unknown); neighbor ops go on.
void Engine::CheckCoordinatorSilence(Clock::time_point now) {
  const double limit = config_.stall_shutdown_s;
  if (limit <= 0 || negotiator_.empty() || !shutting_down_reason_.empty()) return;
  const double silent = SecondsSince(control_->last_heard(), now);
  if (silent < limit + kCoordinatorGraceS) return;
  if (SecondsSince(negotiator_.oldest_submission(now), now) < limit + kCoordinatorGraceS) return;
  shutting_down_reason_ = "no answer from rank 0, which coordinates global ops, for " +
                          std::to_string(static_cast<int>(silent)) +
                          " s (FLOCK_STALL_SHUTDOWN_S): it is stopped, hung or gone; global ops "
                          "are off on rank " +
                          std::to_string(rank_) + " from now on";
  FLOCK_LOG(kError, "stall") << shutting_down_reason_;
  coordinator_lost_ = true;
  stalled_ranks_.insert(0);
  FailAllPending(shutting_down_reason_);
}

void Engine::CheckNeighborStalls() {
  const auto now = Clock::now();
  if (SecondsSince(last_neighbor_stall_check_, now) < kStallCheckPeriodS) return;
  last_neighbor_stall_check_ = now;
  for (int peer : neighbor_->CheckStalls(config_.stall_warning_s, config_.stall_shutdown_s))
    stalled_ranks_.insert(peer);
}

// Shutdown is collective: it ends when every rank has shut down. A rank seen
// stalling past FLOCK_STALL_SHUTDOWN_S may never do so (stopped, hung), and a
// program that caught the stall's errors would then wait in shutdown forever.
// So once every other rank has shut down, rank 0 waits for stalled ranks as
// long as an op would, then ends the job; a rank that saw rank 0 itself stall
// does the same from its own shutdown. A rank that never stalled is awaited as
// long as it takes (the ranks' work may differ in length).
void Engine::CheckShutdownWait(Clock::time_point now) {
  const double limit = config_.stall_shutdown_s;
  if (!shutdown_announced_ || finished_ || limit <= 0) return;
  std::vector<int> overdue;
  if (rank_ == 0)
    overdue = coordinator_->OverdueStalledRanks(now, limit);
  else if (stalled_ranks_.count(0) > 0 && SecondsSince(shutdown_announced_at_, now) >= limit)
    overdue = {0};
  if (overdue.empty()) return;
  std::string ranks;
  for (int r : overdue) ranks += (ranks.empty() ? "" : ", ") + RankAndHost(r);
  EndJob(Status::Aborted(ranks + " stalled and never shut down; the shutdown on rank " +
                         std::to_string(rank_) + " waited " +
                         std::to_string(static_cast<int>(limit)) +
                         " s for it (FLOCK_STALL_SHUTDOWN_S) and the job cannot end normally "
                         "without it: ending the job"));
  finished_ = true;  // EndJob returns only under a test transport
}

// MPI returned an error: messages may be lost, so no rank can be sure what the
// others have seen. Every request here fails with the cause, then the job
// ends, so no other rank waits for this one.
void Engine::FailTransport(const Status& status, const std::string& doing) {
  EndJob(Status::TransportError("the transport failed on rank " + std::to_string(rank_) +
                                " while " + doing + ": " + status.message() + "; ending the job"));
}

// Other ranks may wait in a collective (or for a transfer) this rank can no
// longer take part in: fail what is here, then end every rank of the job.
void Engine::EndJob(const Status& why) {
  if (job_ended_) return;
  job_ended_ = true;
  FLOCK_LOG(kError, "engine") << why.message();
  shutting_down_reason_ = why.message();
  coordinator_lost_ = true;  // a shutdown will not wait for rank 0's final answer
  FailAllPending(why);
  neighbor_->Abandon(why.message());
  windows_->Abandon(why.message());
  transport_.Abort(1);  // does not return under MPI
}

std::string Engine::RankAndHost(int rank) const {
  std::string text = "rank " + std::to_string(rank);
  if (static_cast<size_t>(rank) < hosts_.size()) text += " (host " + hosts_[rank] + ")";
  return text;
}

// Ranks that disagree on the device of a neighbor op's call: those on the
// host path talk to their peers only, those on the device path wait for rank 0
// to negotiate it, so neither side could finish. The first device-path rank
// that hears from a host-path peer reports the call; rank 0 withdraws it.
void Engine::ReportDeviceConflicts() {
  for (DeviceConflict& conflict : neighbor_->TakeDeviceConflicts()) {
    FLOCK_LOG(kDebug, "engine") << conflict.reason;
    control_->Withdraw({std::move(conflict.name), std::move(conflict.match_name), conflict.call,
                        conflict.kind, std::move(conflict.reason)});
  }
}

// Rank 0's answer: the call fails on every rank, on whichever path it is (or
// when it is submitted, on a rank that has not got there yet).
void Engine::WithdrawCall(const Response& withdrawn) {
  const Status status(withdrawn.code, withdrawn.error);
  const std::string& match_name = withdrawn.names.front();
  negotiator_.TakeWithdrawn(match_name, withdrawn.call, [&](PendingRequest& request) {
    finisher_.Finish(request, status, nullptr);
  });
  neighbor_->Withdraw(match_name, withdrawn.call, status);
}

}  // namespace flock
