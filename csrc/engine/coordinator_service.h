// CoordinatorService: rank 0's side of negotiating global ops over the
// transport. It reads the other ranks' announcements and shutdowns, feeds
// them to the Coordinator (coordinator.h, which decides), and sends the
// Coordinator's answers to every other rank; rank 0's own engine handles
// them as they are returned. An announcement rank 0 cannot take breaks
// global ops for everyone (Coordinator::Break), never silently.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "flock/common/counters.h"
#include "flock/common/status.h"
#include "flock/engine/coordinator.h"
#include "flock/transport/transport.h"

namespace flock {

class CoordinatorService {
 public:
  // A transport failure: the engine ends the job (Engine::FailTransport).
  using FailFn = std::function<void(const Status& status, const std::string& doing)>;

  CoordinatorService(Transport& transport, Coordinator& coordinator, EngineCounters& counters,
                     FailFn fail);

  // Takes every control message waiting; the answers it sends are also put
  // in `answers` for rank 0 itself. True when anything happened.
  bool Poll(std::vector<Response>* answers);

 private:
  void Take(int tag, int from, const std::vector<char>& bytes);
  void Answer(const std::vector<Response>& responses);

  Transport& transport_;
  Coordinator& coordinator_;
  EngineCounters& counters_;
  FailFn fail_;
  std::vector<char> bytes_;  // reused receive buffer
};

}  // namespace flock
