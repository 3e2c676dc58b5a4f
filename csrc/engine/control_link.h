// ControlLink: this rank's control messages to and from the coordinator.
// Ranks other than 0 send their announcements and shutdown to rank 0 and read
// its answers; rank 0 hands its own straight to its Coordinator and serves the
// others through a CoordinatorService. Either way the engine gets the same
// answers, in the same order, from Poll.
#pragma once

#include <memory>
#include <vector>

#include "flock/common/counters.h"
#include "flock/common/status.h"
#include "flock/engine/coordinator.h"
#include "flock/engine/coordinator_service.h"
#include "flock/engine/wire.h"
#include "flock/transport/transport.h"

namespace flock {

class ControlLink {
 public:
  // `coordinator`: rank 0's, else null. `fail` ends the job on a transport failure.
  ControlLink(Transport& transport, Coordinator* coordinator, EngineCounters& counters,
              CoordinatorService::FailFn fail);

  // Rank 0 cannot refuse its own entries without breaking global ops (it says so).
  void Announce(const std::vector<ReadyEntry>& entries);
  // `stalled`: ranks this one saw stall (rank 0 decides whether to wait for
  // them). `coordinator_lost`: rank 0 is told without expecting a final
  // answer, and a failed send is not an error (it may be gone).
  void AnnounceShutdown(const std::vector<int>& stalled, bool coordinator_lost);
  // Tells rank 0 that a negotiated neighbor op's call cannot run.
  void Withdraw(const Withdrawal& withdrawal);
  // Fills `answers` with the coordinator's answers; true when anything
  // happened. An answer from rank 0 that cannot be read is returned as an
  // error: the job must end (rank 0 may have scheduled a collective).
  Result<bool> Poll(std::vector<Response>* answers);
  // Ranks other than 0: when rank 0 last sent anything (Start resets it).
  Clock::time_point last_heard() const { return last_heard_; }
  void ResetLastHeard(Clock::time_point now) { last_heard_ = now; }

 private:
  Result<bool> PollResponses(std::vector<Response>* answers);

  Transport& transport_;
  const int rank_;
  Coordinator* coordinator_;
  EngineCounters& counters_;
  CoordinatorService::FailFn fail_;
  std::unique_ptr<CoordinatorService> service_;  // rank 0
  std::vector<char> bytes_;                      // reused receive buffer
  Clock::time_point last_heard_;
};

}  // namespace flock
