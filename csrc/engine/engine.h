// Engine: the loop that owns communication, and the thread that runs it when
// nobody waits.
//
// User threads Submit a request and get a handle at once; the loop announces
// ready requests to the coordinator (rank 0), receives the coordinator's
// responses — the same sequence on every rank — and executes them, fusing
// small allreduces into one call. Vocabulary of a request's life: queued
// (submitted, not yet seen by the loop) -> negotiating (announced, waiting for
// every rank) -> executing -> done (handle completed).
//
// Who runs the loop: the engine thread, except while a caller waits for a
// handle — then the caller runs it (Wait -> TryDrive), since a waiting thread
// is not computing, and handing work to a sleeping thread and back costs two
// wake-ups (~12 us each on this project's VM). The driver_ mutex guards the
// loop's state; the engine thread lets go of it whenever it yields or sleeps,
// and before it wakes the callers whose ops it finished (a woken caller often
// takes its core at once, and then finds the loop free to drive).
//
// Spinning only for a waiter: the loop yields instead of sleeping only while a
// thread of this rank waits for a result (or, on the coordinator, other ranks'
// announcements are pending): lanes in flight are polled without pause, a
// response is awaited without pause for a while after the last activity (a
// driving caller on ranks that share cores: up to 100 ms, else 1 ms). With
// nobody waiting, user threads compute: lanes on this host are polled every
// 10 us, lanes to other hosts every 10-100 us (the socket buffers carry the
// bytes between polls), a due response after an eighth of the time waited so
// far (10 us to 1 ms), and with nothing in flight a worker sleeps on its
// Parker until a request arrives (looking for late neighbour notices every
// 10 ms). Fusion: an announcement waits until no
// request has arrived for FLOCK_CYCLE_TIME_MS (at most ten cycles in all),
// unless a thread is already waiting for one of its requests; the engine
// sleeps through that window, and ops submitted meanwhile (global, or neighbor
// ops whose entries wait in the outbox for the same window) join it without
// waking the engine.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flock/common/config.h"
#include "flock/common/counters.h"
#include "flock/common/parker.h"
#include "flock/common/timeline.h"
#include "flock/engine/control_link.h"
#include "flock/engine/coordinator.h"
#include "flock/engine/handle_table.h"
#include "flock/engine/idle_policy.h"
#include "flock/engine/negotiator.h"
#include "flock/engine/request_finisher.h"
#include "flock/engine/request_queue.h"
#include "flock/neighbor/neighbor_exchange.h"
#include "flock/requests/op_signature.h"
#include "flock/requests/pending_request.h"
#include "flock/transport/data_path.h"
#include "flock/transport/gpu_backend.h"
#include "flock/transport/transport.h"
#include "flock/window/window_service.h"
#include "flock/window/window_table.h"

namespace flock {

class Engine {
 public:
  // `hosts`: each rank's host name, for messages about other ranks (may be empty).
  Engine(Transport& transport, const Config& config, std::vector<std::string> hosts = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Status Start();
  // Completes what every rank agreed on, fails the rest, stops the thread.
  // Returns once every rank has shut down (it is collective, like MPI_Finalize).
  void Shutdown();

  // Queues a request. A name already in flight on this rank is refused here.
  // `wait_follows`: the caller waits for it at once (a blocking call), so the
  // engine is not woken: the Wait drives it or wakes it.
  Result<HandleId> Submit(OpRequest op, TensorView output, std::shared_ptr<void> keep_alive,
                          bool wait_follows = false);
  // Waits for a handle (use this, not handles().Wait). If the loop is free —
  // the engine thread sleeps or yields, and no other caller drives — the
  // caller runs it until the op is done (a blocking call then costs neither
  // the engine's wake-up nor its own), or until it would sleep (on ranks that
  // share cores: until 1 ms passes), then hands it back. Otherwise, or then,
  // it sleeps until done.
  // A driver runs collectives itself: Ctrl-C waits for the one under way.
  Result<Completion> Wait(HandleId id, std::chrono::milliseconds poll_interval,
                          const std::function<Status()>& interrupted);

  HandleTable& handles() { return handles_; }
  Timeline& timeline() { return timeline_; }
  const EngineCounters& counters() const { return counters_; }
  // The neighbor ops' pool of scratch buffers (thread-safe).
  BufferPool& scratch_pool() { return neighbor_->scratch_pool(); }
  // This rank's windows (thread-safe), served by the engine thread.
  WindowTable& windows() { return window_table_; }
  // For a window's slot locks: a slot was let go of (any thread).
  std::function<void()> WindowNotifier();
  // The GPU backend, once the runtime has made it (at the first CUDA tensor,
  // before that tensor's request is submitted).
  void SetGpuBackend(GpuBackend* gpu) { gpu_.store(gpu, std::memory_order_release); }

 private:
  void Run();
  // engine_lifecycle.cc: this rank leaves; rank 0 learns of it (or, lost, is told anyway).
  void AnnounceShutdown();
  bool Step();
  bool DrainQueue();
  bool SendReady();
  bool PollControl();
  void CheckStalls();
  void CheckCoordinatorSilence(Clock::time_point now);
  void CheckNeighborStalls();
  void CheckShutdownWait(Clock::time_point now);
  // "rank 3 (host h2)", for messages naming another rank.
  std::string RankAndHost(int rank) const;
  void Handle(const std::vector<Response>& responses);
  void Execute(const Response& response);
  // executor.cc: one response's transport calls; an allgather's output in `gathered`.
  Status RunBatch(DataPath& path, const Response& response,
                  const std::vector<PendingRequest*>& batch,
                  std::shared_ptr<GatheredTensor>* gathered);
  // gpu_executor.cc: a batch of CUDA tensors, ordered after the callers'
  // streams; `done` marks its end on flock's stream.
  Status RunGpuBatch(const Response& response, const std::vector<PendingRequest*>& batch,
                     std::shared_ptr<GatheredTensor>* gathered, GpuEventPtr* done);
  Status RunGpuWork(GpuBackend& gpu, const Response& response,
                    const std::vector<PendingRequest*>& batch,
                    std::shared_ptr<GatheredTensor>* gathered);
  // Forgets finished CUDA work; reports an asynchronous GPU failure once.
  void CheckGpuWork();
  void FailAllPending(const std::string& reason);
  void FailAllPending(const Status& status);
  // engine_faults.cc: see there.
  void FailTransport(const Status& status, const std::string& doing);
  void EndJob(const Status& why);
  void ReportDeviceConflicts();
  void WithdrawCall(const Response& withdrawn);

  IdlePlan PlanIdle(bool did_work);
  void Idle(bool did_work);
  // The engine thread takes the loop back once no caller drives it.
  void Relock();
  void TryDrive(HandleId id);
  // A thread waits: flush the fusion windows at the next Step.
  void RequestFlush();

  Transport& transport_;
  const Config config_;
  const int rank_;
  const int size_;
  const bool shares_cores_;
  const std::vector<std::string> hosts_;  // a driving caller polls on where the engine would sleep
  HandleTable handles_{/*hold_wakes=*/true};  // see Idle: woken once the loop is let go
  Timeline timeline_;
  EngineCounters counters_;
  std::thread thread_;

  // Shared with user threads.
  Parker wake_;            // user threads wake the engine's Idle sleep
  RequestQueue requests_;  // their requests, flushes and stop

  // Held by whichever thread runs the loop: the engine thread, except while it
  // yields or sleeps, when a waiting caller may drive instead (TryDrive).
  // Everything below is the driver's.
  std::mutex driver_;
  std::atomic<int> active_drivers_{0};  // a caller drives: the engine thread stays asleep

  // The driver's (the engine thread's, or a driving caller's).
  Negotiator negotiator_;   // global requests: the fusion window, then pending an answer
  bool flush_now_ = false;  // a thread waits: announce without waiting for more
  std::unique_ptr<Coordinator> coordinator_;    // rank 0
  std::unique_ptr<ControlLink> control_;        // to and from the coordinator
  std::vector<Response> answers_;               // reused by PollControl
  std::unique_ptr<NeighborExchange> neighbor_;  // neighbor ops: no coordinator
  WindowTable window_table_;
  std::unique_ptr<WindowService> windows_;  // window ops: no coordinator either
  Clock::time_point last_neighbor_stall_check_;
  bool shutdown_announced_ = false;
  Clock::time_point shutdown_announced_at_;
  // Ranks seen stalling past FLOCK_STALL_SHUTDOWN_S in neighbor ops, or rank 0
  // lost (rank 0's own global stalls: its Coordinator records them).
  std::set<int> stalled_ranks_;
  bool finished_ = false;
  std::string shutting_down_reason_;
  HostDataPath host_path_{transport_};
  std::atomic<GpuBackend*> gpu_{nullptr};
  std::deque<GpuEventPtr> gpu_in_flight_;  // done events not yet reached
  IdleState idle_state_;  // the idle policy's memory (last activity, network back-off)
  Clock::time_point last_stall_check_;
  bool coordinator_lost_ = false;  // rank 0 stopped answering: shut down without it
  bool job_ended_ = false;         // EndJob ran (once)
  RequestFinisher finisher_{timeline_, requests_, handles_, counters_};
};

}  // namespace flock
