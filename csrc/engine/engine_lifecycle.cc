// The engine's life: starting its thread, the loop until every rank has
// shut down, this rank's shutdown announcement, and stopping without leaving
// a peer, a transfer or a waiting caller behind.
#include <chrono>
#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "flock/common/logging.h"
#include "flock/engine/engine.h"

namespace flock {
namespace {

// How long a stopping engine waits for the other ranks' neighbour goodbyes.
constexpr auto kNeighborDrainLimit = std::chrono::seconds(10);

}  // namespace

Status Engine::Start() {
  if (!config_.timeline_path.empty()) {
    FLOCK_RETURN_IF_ERROR(timeline_.Start(config_.timeline_path, rank_));
  }
  last_stall_check_ = Clock::now();
  last_neighbor_stall_check_ = last_stall_check_;
  control_->ResetLastHeard(last_stall_check_);
  thread_ = std::thread([this] { Run(); });
  return Status::OK();
}

void Engine::Shutdown() {
  requests_.RequestStop();
  wake_.Unpark();
  if (thread_.joinable()) thread_.join();
  timeline_.Stop();
}

void Engine::Run() {
#ifdef __linux__
  // Short sleeps in the poll loop should last what they ask for, not the
  // default 50 us timer slack more.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  driver_.lock();  // let go only while the engine thread yields or sleeps (see Idle)
  idle_state_.last_activity = Clock::now();
  while (!finished_) Idle(Step());
  // Every rank has shut down; the neighbour goodbyes and the last transfers
  // may still be on their way (another communicator than the final response).
  // Without rank 0 its goodbye never comes: do not wait the full limit for it.
  // After EndJob (under a test transport) nothing more will come.
  const std::chrono::seconds drain_limit = job_ended_          ? std::chrono::seconds(0)
                                           : coordinator_lost_ ? std::chrono::seconds(1)
                                                               : kNeighborDrainLimit;
  const auto give_up = Clock::now() + drain_limit;
  while (!neighbor_->done() && Clock::now() < give_up) Idle(Step());
  Step();  // requests queued at the very end fail here (this rank has left)
  handles_.WakeHeld();
  if (!neighbor_->done()) {
    if (!job_ended_) {
      FLOCK_LOG(kWarning, "engine")
          << "stopped without every neighbour's goodbye after " << drain_limit.count() << " s";
    }
    neighbor_->Abandon("flock was shut down before this call's transfers finished");
  }
  windows_->Abandon("flock was shut down before this window op finished");
  // Nothing may wait for a handle this thread will never complete.
  handles_.FailAllPending(Status::Aborted("flock has been shut down"));
  // Deliver what is still posted (e.g. the last responses) before the
  // transport may be torn down.
  for (int i = 0; i < 100000; ++i) {
    auto done = transport_.ProgressSends();
    if (!done.ok() || done.value()) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  driver_.unlock();
}

void Engine::AnnounceShutdown() {
  shutdown_announced_ = true;
  shutdown_announced_at_ = Clock::now();
  neighbor_->Depart();
  // Without rank 0, no final answer will come (CheckCoordinatorSilence,
  // EndJob); rank 0, if it still runs, is told anyway.
  control_->AnnounceShutdown({stalled_ranks_.begin(), stalled_ranks_.end()}, coordinator_lost_);
  // A lost rank 0 is among the stalled ranks: MPI_Finalize would wait for it
  // forever, so CheckShutdownWait ends the job FLOCK_STALL_SHUTDOWN_S from now.
  // Not at once: other survivors' ops still waiting for rank 0 fail within
  // that time, and their ranks learn why instead of being ended first.
}

}  // namespace flock
