// Engine: the one thread that owns communication.
//
// User threads Submit a request and get a handle at once; the engine thread
// announces ready requests to the coordinator (rank 0), receives the
// coordinator's responses — the same sequence on every rank — and executes
// them, fusing small allreduces into one call. Vocabulary of a request's life:
// queued (submitted, not yet seen by the engine) -> negotiating (announced,
// waiting for every rank) -> executing -> done (handle completed).
//
// Waiting without spinning: with nothing in flight a worker sleeps on its
// Parker until a request arrives; while it waits for a response, and on the
// coordinator (which must hear other ranks at any time), the loop polls —
// without sleeping for 200 us after the last activity while a response is
// due, then sleeping an eighth of the time waited so far (10 us to 1 ms).
// Neighbor lanes in flight: polled without sleeping when the peer is on this
// host (shared memory moves only inside MPI calls) or when a thread is blocked
// on a result; otherwise every 10-100 us for a peer on another host (the
// socket buffers carry the bytes between polls). Fusion: an announcement waits
// until no request has arrived for FLOCK_CYCLE_TIME_MS (at most ten cycles in
// all), unless a thread is already waiting for one of its requests; the engine
// sleeps through that window, and global ops submitted meanwhile join it
// without waking the engine.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/config.h"
#include "common/parker.h"
#include "engine/coordinator.h"
#include "engine/counters.h"
#include "engine/handle_table.h"
#include "engine/pending_request.h"
#include "engine/timeline.h"
#include "neighbor/neighbor_exchange.h"
#include "ops/op_signature.h"
#include "transport/transport.h"

namespace flock {

class Engine {
 public:
  Engine(Transport& transport, const Config& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Status Start();
  // Completes what every rank agreed on, fails the rest, stops the thread.
  // Returns once every rank has shut down (it is collective, like MPI_Finalize).
  void Shutdown();

  // Queues a request. A name already in flight on this rank is refused here.
  Result<HandleId> Submit(OpRequest op, TensorView output, std::shared_ptr<void> keep_alive);

  HandleTable& handles() { return handles_; }
  Timeline& timeline() { return timeline_; }
  const EngineCounters& counters() const { return counters_; }

 private:
  void Run();
  bool Step();
  bool DrainQueue();
  bool SendReady();
  bool PollControl();
  void CheckStalls();
  void CheckNeighborStalls();
  void Handle(const std::vector<Response>& responses);
  void Execute(const Response& response);
  void Finish(PendingRequest& request, Status status, std::shared_ptr<GatheredTensor> gathered);
  void FinishBatch(const std::vector<PendingRequest*>& batch, const Status& status);
  void FailAllPending(const std::string& reason);
  void Idle(bool did_work);
  Clock::time_point AnnounceDeadline() const;

  Transport& transport_;
  const Config config_;
  const int rank_;
  const int size_;
  HandleTable handles_;
  Timeline timeline_;
  EngineCounters counters_;
  std::thread thread_;

  // Shared with user threads, under mutex_.
  std::mutex mutex_;
  Parker wake_;  // user threads wake the engine's Idle sleep
  std::vector<PendingRequest> queue_;
  std::unordered_set<std::string> names_in_flight_;
  bool stop_requested_ = false;
  bool flush_requested_ = false;
  bool accepting_ = true;
  std::string refusal_;  // why Submit is refused once the engine stopped accepting
  // Set (under mutex_) whenever queue_, stop_requested_ or flush_requested_
  // change, so the polling loop looks at them without taking the lock.
  std::atomic<bool> user_signal_{false};
  // The engine sleeps through a fusion window: a global op submitted meanwhile
  // joins it without waking the engine (a wait or the window's end does), so a
  // burst of nonblocking calls costs no wake-up per call.
  std::atomic<bool> gathering_{false};

  // Engine thread only.
  std::unordered_map<std::string, PendingRequest> pending_;
  std::vector<ReadyEntry> unsent_;
  bool flush_now_ = false;          // a thread waits: announce unsent_ without waiting for more
  Clock::time_point first_unsent_;  // arrival of the oldest / newest unannounced request
  Clock::time_point last_unsent_;
  Clock::time_point window_opened_;  // when Idle first saw the current fusion window
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<NeighborExchange> neighbor_;  // neighbor ops: no coordinator
  Clock::time_point last_neighbor_stall_check_;
  bool shutdown_announced_ = false;
  bool finished_ = false;
  std::string shutting_down_reason_;
  std::vector<char> fusion_buffer_;
  double idle_sleep_us_ = 0;
  Clock::time_point last_activity_;
  Clock::time_point last_stall_check_;
};

}  // namespace flock
