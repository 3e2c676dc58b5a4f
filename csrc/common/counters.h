// Engine counters, readable at any time from any thread (tests, benchmarks).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace flock {

struct EngineCounters {
  std::atomic<int64_t> requests{0};           // submitted requests
  std::atomic<int64_t> submit_wakeups{0};     // submissions that woke the sleeping engine thread
  std::atomic<int64_t> driven_waits{0};       // waits whose caller ran the engine's loop itself
  std::atomic<int64_t> driven_done{0};        // ... and saw its op finish before handing over
  std::atomic<int64_t> ready_messages{0};     // announcement messages sent to the coordinator
  std::atomic<int64_t> ready_entries{0};      // names announced
  std::atomic<int64_t> cache_hits{0};         // names announced by cache id only
  std::atomic<int64_t> cached_names{0};       // names in this rank's response cache
  std::atomic<int64_t> response_messages{0};  // response batches received (or made, on rank 0)
  std::atomic<int64_t> batches{0};            // data calls executed (a fused batch is one)
  std::atomic<int64_t> fused_batches{0};      // batches of more than one tensor
  std::atomic<int64_t> fused_tensors{0};      // tensors that travelled in such batches
  std::atomic<int64_t> bytes{0};              // tensor bytes communicated by this rank
  std::atomic<int64_t> control_bytes{0};      // negotiation bytes sent by this rank
  std::atomic<int64_t> errors{0};             // requests that failed
  std::atomic<int64_t> neighbor_messages{0};  // neighbor-op control messages sent
  std::atomic<int64_t> neighbor_entries{0};   // tensors (data entries) those messages carried
  std::atomic<int64_t> neighbor_lanes{0};     // tensors sent as their own data message
  std::atomic<int64_t> neighbor_bytes{0};     // tensor bytes sent to neighbours
  // lane receives from other hosts that waited for the budget (FLOCK_NEIGHBOR_LANE_BUDGET)
  std::atomic<int64_t> neighbor_lanes_queued{0};
  std::atomic<int64_t> window_ops{0};     // this rank's window ops (put, accumulate, get, mutex)
  std::atomic<int64_t> window_bytes{0};   // tensor bytes sent by window ops (and get replies)
  std::atomic<int64_t> window_served{0};  // other ranks' window messages served here

  std::map<std::string, int64_t> Snapshot() const {
    return {{"requests", requests},
            {"submit_wakeups", submit_wakeups},
            {"driven_waits", driven_waits},
            {"driven_done", driven_done},
            {"ready_messages", ready_messages},
            {"ready_entries", ready_entries},
            {"cache_hits", cache_hits},
            {"cached_names", cached_names},
            {"response_messages", response_messages},
            {"batches", batches},
            {"fused_batches", fused_batches},
            {"fused_tensors", fused_tensors},
            {"bytes", bytes},
            {"control_bytes", control_bytes},
            {"errors", errors},
            {"neighbor_messages", neighbor_messages},
            {"neighbor_entries", neighbor_entries},
            {"neighbor_lanes", neighbor_lanes},
            {"neighbor_bytes", neighbor_bytes},
            {"neighbor_lanes_queued", neighbor_lanes_queued},
            {"window_ops", window_ops},
            {"window_bytes", window_bytes},
            {"window_served", window_served}};
  }
};

}  // namespace flock
