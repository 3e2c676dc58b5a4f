#include "engine/engine.h"

#include <algorithm>
#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "common/logging.h"
#include "engine/wire.h"

namespace flock {
namespace {

constexpr int kReadyTag = 1;
constexpr int kResponseTag = 2;
constexpr int kShutdownTag = 3;
constexpr double kMinSleepUs = 10;
constexpr double kMaxSleepUs = 1000;
// While awaiting, each sleep lasts this fraction of the time already waited: a
// message arriving after W is seen by about W * 1.125, while a long wait still
// polls only every kMaxSleepUs. (Doubling sleeps could see it only at 2 W.)
constexpr double kSleepFractionOfWait = 0.125;
// Longest pause between polls while bytes cross a network: short enough that
// the socket buffers never run dry (at 10 Gbit/s, 100 us is 125 KB).
constexpr double kMaxNetworkPollSleepUs = 100;
// How long after the last activity the loop keeps polling without sleeping
// while a response is due and someone on this rank waits for it (or, on the
// coordinator, other ranks' announcements are pending).
constexpr auto kSpinWindow = std::chrono::microseconds(200);
// How long a waiting caller runs the engine's loop itself (see TryDrive)
// before it leaves the rest to the engine thread and sleeps: the wake-ups it
// saves matter for short ops, not against a millisecond of transfer.
constexpr auto kMaxDrive = std::chrono::milliseconds(1);
// How often an engine with nothing in flight looks for neighbours' messages.
constexpr auto kIdlePollInterval = std::chrono::milliseconds(10);
// How long a stopping engine waits for the other ranks' neighbour goodbyes.
constexpr auto kNeighborDrainLimit = std::chrono::seconds(10);

std::chrono::nanoseconds Microseconds(double us) {
  return std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
}

}  // namespace

Engine::Engine(Transport& transport, const Config& config)
    : transport_(transport),
      config_(config),
      rank_(transport.rank(CommGroup::kControl)),
      size_(transport.size(CommGroup::kControl)) {
  if (rank_ == 0)
    coordinator_ = std::make_unique<Coordinator>(size_, config.fusion_threshold_bytes,
                                                 static_cast<size_t>(config.cache_capacity));
  NeighborExchange::Options neighbor_options;
  neighbor_options.inline_limit_bytes = config.neighbor_inline_bytes;
  neighbor_options.message_limit_bytes = config.fusion_threshold_bytes;
  // The neighbor group is the world's ranks in the world's order.
  for (int r = 0; r < size_; ++r)
    neighbor_options.peer_on_this_host.push_back(transport.on_this_host(r));
  neighbor_options.cycle_time_ms = config.cycle_time_ms;
  neighbor_ = std::make_unique<NeighborExchange>(
      transport, neighbor_options, counters_, timeline_,
      [this](PendingRequest& request, Status status, std::shared_ptr<GatheredTensor> gathered) {
        Finish(request, std::move(status), std::move(gathered));
      });
  handles_.SetWaitListener([this] {
    RequestFlush();
    wake_.Unpark();
  });
}

void Engine::RequestFlush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_requested_ = true;
  user_signal_.store(true, std::memory_order_seq_cst);
}

Engine::~Engine() {
  Shutdown();
}

Status Engine::Start() {
  if (!config_.timeline_path.empty()) {
    FLOCK_RETURN_IF_ERROR(timeline_.Start(config_.timeline_path, rank_));
  }
  last_stall_check_ = Clock::now();
  last_neighbor_stall_check_ = last_stall_check_;
  thread_ = std::thread([this] { Run(); });
  return Status::OK();
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
    user_signal_.store(true, std::memory_order_release);
  }
  wake_.Unpark();
  if (thread_.joinable()) thread_.join();
  timeline_.Stop();
}

Result<HandleId> Engine::Submit(OpRequest op, TensorView output, std::shared_ptr<void> keep_alive,
                                bool wait_follows) {
  HandleId handle = 0;
  // A global op does nothing before its announcement, so it may join a fusion
  // window the engine sleeps through; a neighbor op may start transfers at once.
  const bool may_join_window = !IsNeighborOp(op.kind);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!accepting_) return Status::Aborted(refusal_);
    if (!names_in_flight_.insert(op.name).second) {
      return Status::InvalidArgument(std::string(OpKindName(op.kind)) + " '" + op.name +
                                     "': a request with this name is still in flight on this "
                                     "rank; synchronize it first or use another name");
    }
    PendingRequest request;
    request.handle = handles_.Create(std::move(keep_alive));
    request.op = std::move(op);
    request.output = output;
    request.submitted = Clock::now();
    handle = request.handle;
    queue_.push_back(std::move(request));
    ++counters_.requests;
    user_signal_.store(true, std::memory_order_seq_cst);  // see gathering_
  }
  // The caller's Wait drives the engine or wakes it (see TryDrive).
  if (wait_follows) return handle;
  // After unlocking: a woken engine would otherwise block on mutex_ at once,
  // and its wake-up would cost a second futex call.
  if (!(may_join_window && gathering_.load(std::memory_order_seq_cst)) && wake_.Unpark())
    ++counters_.submit_wakeups;
  return handle;
}

Result<Completion> Engine::Wait(HandleId id, std::chrono::milliseconds poll_interval,
                                const std::function<Status()>& interrupted) {
  TryDrive(id);
  return handles_.Wait(id, poll_interval, interrupted);
}

void Engine::TryDrive(HandleId id) {
  const Result<bool> already = handles_.IsDone(id);
  if (!already.ok() || already.value()) return;  // nothing to wait for: collect it at once
  // One try: the loop is free while the engine thread sleeps (or yields).
  // Awake and busy — other work, another caller driving — it finishes this op
  // too, and the caller sleeps until it does. Waiting for the loop instead
  // passes it back and forth, a context switch each way: on 4 ranks sharing
  // 2 cores that made a 1 MiB neighbor_allreduce ~40 % slower.
  std::unique_lock<std::mutex> driving(driver_, std::try_to_lock);
  if (!driving.owns_lock() || finished_) return;  // busy, or gone
  active_drivers_.fetch_add(1, std::memory_order_seq_cst);
  RequestFlush();  // as the wait listener does, without waking anyone
  ++counters_.driven_waits;
  const auto give_up = Clock::now() + kMaxDrive;
  bool done = false;
  while (!finished_ && Clock::now() < give_up) {
    const Result<bool> finished = handles_.IsDone(id);
    done = !finished.ok() || finished.value();
    if (done) break;
    const IdlePlan plan = PlanIdle(Step());
    // A sleep is the engine thread's to take: this caller sleeps in its Wait.
    if (plan.kind == IdleKind::kSleep) break;
    if (plan.kind == IdleKind::kYield) std::this_thread::yield();
  }
  if (done) ++counters_.driven_done;
  // The engine thread sleeps until a driver wakes it: when this one hands
  // over, or leaves work in flight (a blocking call usually leaves none; what
  // other ranks announce later reaches the coordinator with this rank's own
  // announcement, which wakes it).
  const bool wake_engine = !done || !pending_.empty() || !unsent_.empty() || neighbor_->busy() ||
                           neighbor_->has_unsent() || (shutdown_announced_ && !finished_);
  driving.unlock();
  // Counted down after unlocking: the engine thread, asleep until it sees no
  // driver, then usually finds the lock free (no futex call to wake it).
  active_drivers_.fetch_sub(1, std::memory_order_seq_cst);
  // A submission, a wait or a stop since this driver's last Step woke an
  // engine thread that went back to sleep because a driver was active: wake
  // it again (seq_cst with its check of active_drivers_).
  if (wake_engine || user_signal_.load(std::memory_order_seq_cst)) wake_.Unpark();
}

void Engine::Run() {
#ifdef __linux__
  // Short sleeps in the poll loop should last what they ask for, not the
  // default 50 us timer slack more.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  driver_.lock();  // let go only while the engine thread yields or sleeps (see Idle)
  last_activity_ = Clock::now();
  while (!finished_) Idle(Step());
  // Every rank has shut down; the neighbour goodbyes and the last transfers
  // may still be on their way (another communicator than the final response).
  const auto give_up = Clock::now() + kNeighborDrainLimit;
  while (!neighbor_->done() && Clock::now() < give_up) Idle(Step());
  Step();  // requests queued at the very end fail here (this rank has left)
  if (!neighbor_->done()) {
    FLOCK_LOG(kWarning, "engine") << "stopped without every neighbour's goodbye after "
                                  << kNeighborDrainLimit.count() << " s";
    neighbor_->Abandon("flock was shut down before this call's transfers finished");
  }
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

bool Engine::Step() {
  bool did_work = DrainQueue();
  const bool flush = flush_now_;  // read with the queue swap; SendReady clears it
  did_work |= neighbor_->Poll();
  did_work |= neighbor_->Flush(flush);
  did_work |= SendReady();
  did_work |= PollControl();
  if (rank_ == 0) CheckStalls();
  CheckNeighborStalls();
  auto progressed = transport_.ProgressSends();
  if (!progressed.ok()) FLOCK_LOG(kError, "engine") << progressed.status().ToString();
  return did_work;
}

bool Engine::DrainQueue() {
  // Nothing new from user threads: skip the lock they take to submit.
  if (!user_signal_.load(std::memory_order_seq_cst)) return false;  // see gathering_
  std::vector<PendingRequest> arrived;
  bool stop = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    user_signal_.store(false, std::memory_order_relaxed);
    arrived.swap(queue_);
    stop = stop_requested_;
    flush_now_ = flush_now_ || flush_requested_ || stop_requested_;
    flush_requested_ = false;
  }
  for (PendingRequest& request : arrived) {
    const std::string& name = request.op.name;
    timeline_.Begin(name, OpKindName(request.op.kind), request.submitted);
    timeline_.Begin(name, "QUEUED", request.submitted);
    timeline_.End(name);
    if (IsNeighborOp(request.op.kind)) {
      // Talks to its peers only: no negotiation, and another rank's shutdown
      // fails it only if that rank is one of its peers (its goodbye says so).
      neighbor_->Add(std::move(request));
      continue;
    }
    if (!shutting_down_reason_.empty()) {
      Finish(request, Status::Aborted(shutting_down_reason_), nullptr);
      continue;
    }
    timeline_.Begin(name, "NEGOTIATING");
    ReadyEntry entry{name, -1, MakeSignature(request.op)};
    if (request.op.auto_named)
      entry.cache_id = kDoNotCache;
    else if (request.op.kind != OpKind::kAllgather)
      entry.cache_id = cache_.Lookup(name, entry.signature);
    // Submission times: a request that joined a window while the engine slept
    // extends it from when it came, not from when the engine woke.
    if (unsent_.empty()) first_unsent_ = request.submitted;
    last_unsent_ = std::max(last_unsent_, request.submitted);
    unsent_.push_back(std::move(entry));
    pending_.emplace(name, std::move(request));
  }
  if (stop && !shutdown_announced_) {
    shutdown_announced_ = true;
    neighbor_->Depart();
    if (rank_ == 0) {
      coordinator_->AddShutdown(0);
    } else {
      Status s = transport_.PostSend({}, 0, kShutdownTag, CommGroup::kControl);
      if (!s.ok()) FLOCK_LOG(kError, "engine") << s.ToString();
    }
    return true;
  }
  return !arrived.empty();
}

bool Engine::SendReady() {
  if (unsent_.empty()) {
    flush_now_ = false;
    return false;
  }
  // flush_now_ was read together with the queue swap, so everything submitted
  // before a thread started waiting is in unsent_ and goes out in this one message.
  if (!flush_now_ && Clock::now() < AnnounceDeadline()) return false;  // gather more for fusion
  flush_now_ = false;
  ++counters_.ready_messages;
  counters_.ready_entries += static_cast<int64_t>(unsent_.size());
  for (const ReadyEntry& e : unsent_) counters_.cache_hits += e.cache_id >= 0 ? 1 : 0;
  if (rank_ == 0) {
    Status s = coordinator_->AddReady(0, unsent_, Clock::now());
    if (!s.ok()) FLOCK_LOG(kError, "engine") << s.ToString();
  } else {
    std::vector<char> bytes = EncodeReady(unsent_);
    counters_.control_bytes += static_cast<int64_t>(bytes.size());
    Status s = transport_.PostSend(std::move(bytes), 0, kReadyTag, CommGroup::kControl);
    if (!s.ok()) FLOCK_LOG(kError, "engine") << s.ToString();
  }
  unsent_.clear();
  return true;
}

bool Engine::PollControl() {
  bool did_work = false;
  int from = 0;
  std::vector<char> bytes;
  if (rank_ == 0) {
    while (true) {
      auto got = transport_.TryReceive(-1, kReadyTag, CommGroup::kControl, &from, &bytes);
      if (!got.ok() || !got.value()) break;
      auto entries = DecodeReady(bytes);
      Status s = entries.ok() ? coordinator_->AddReady(from, entries.value(), Clock::now())
                              : entries.status();
      if (!s.ok()) FLOCK_LOG(kError, "engine") << s.ToString();
      did_work = true;
    }
    while (true) {
      auto got = transport_.TryReceive(-1, kShutdownTag, CommGroup::kControl, &from, &bytes);
      if (!got.ok() || !got.value()) break;
      coordinator_->AddShutdown(from);
      did_work = true;
    }
    std::vector<Response> responses = coordinator_->TakeResponses();
    if (responses.empty()) return did_work;
    std::vector<char> encoded = EncodeResponses(responses);
    for (int r = 1; r < size_; ++r) {
      counters_.control_bytes += static_cast<int64_t>(encoded.size());
      Status s = transport_.PostSend(encoded, r, kResponseTag, CommGroup::kControl);
      if (!s.ok()) FLOCK_LOG(kError, "engine") << s.ToString();
    }
    Handle(responses);
    return true;
  }
  while (true) {
    auto got = transport_.TryReceive(0, kResponseTag, CommGroup::kControl, &from, &bytes);
    if (!got.ok() || !got.value()) break;
    auto responses = DecodeResponses(bytes);
    if (!responses.ok()) {
      FLOCK_LOG(kError, "engine") << responses.status().ToString();
      continue;
    }
    Handle(responses.value());
    did_work = true;
  }
  return did_work;
}

void Engine::CheckStalls() {
  const auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_stall_check_).count() < 1.0) return;
  last_stall_check_ = now;
  std::vector<Stall> stalls = coordinator_->FindStalls(now, config_.stall_warning_s);
  for (const Stall& stall : stalls) {
    std::string ready, missing;
    for (int r : stall.ready_ranks) ready += (ready.empty() ? "" : ", ") + std::to_string(r);
    for (int r : stall.missing_ranks) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    FLOCK_LOG(kWarning, "stall") << "'" << stall.name << "' has waited "
                                 << static_cast<int>(stall.seconds) << " s: submitted by ranks "
                                 << ready << " but not by ranks " << missing;
    if (config_.stall_shutdown_s > 0 && stall.seconds >= config_.stall_shutdown_s) {
      coordinator_->FailStalled({stall}, "'" + stall.name + "' stalled for " +
                                             std::to_string(static_cast<int>(stall.seconds)) +
                                             " s: ranks " + missing +
                                             " never submitted it (FLOCK_STALL_SHUTDOWN_S)");
    }
  }
}

void Engine::Handle(const std::vector<Response>& responses) {
  ++counters_.response_messages;
  for (const Response& response : responses) {
    switch (response.type) {
      case ResponseType::kExecute: Execute(response); break;
      case ResponseType::kError:
        for (const std::string& name : response.names) {
          auto it = pending_.find(name);
          if (it == pending_.end()) continue;  // this rank never submitted it (stall, shutdown)
          // A rank that rejected its own input reports its own reason.
          const Status& local = it->second.op.local_status;
          Status status = local.ok()
                              ? Status(response.code, response.error)
                              : Status(local.code(), std::string(OpKindName(it->second.op.kind)) +
                                                         " '" + name + "': " + local.message());
          Finish(it->second, std::move(status), nullptr);
          pending_.erase(it);
        }
        break;
      case ResponseType::kShuttingDown:
        shutting_down_reason_ = response.error;
        FailAllPending(response.error);
        break;
      case ResponseType::kFinal: {
        std::lock_guard<std::mutex> lock(mutex_);
        accepting_ = false;
        refusal_ = "flock has been shut down";
        finished_ = true;
        break;
      }
    }
  }
}

void Engine::Finish(PendingRequest& request, Status status,
                    std::shared_ptr<GatheredTensor> gathered) {
  if (!status.ok()) ++counters_.errors;
  timeline_.End(request.op.name);  // the op's span
  {
    std::lock_guard<std::mutex> lock(mutex_);
    names_in_flight_.erase(request.op.name);
  }
  handles_.Complete(request.handle, std::move(status), std::move(gathered));
}

void Engine::FinishBatch(const std::vector<PendingRequest*>& batch, const Status& status) {
  if (!status.ok()) counters_.errors += static_cast<int64_t>(batch.size());
  std::vector<HandleId> ids;
  ids.reserve(batch.size());
  for (PendingRequest* r : batch) {
    timeline_.End(r->op.name);
    ids.push_back(r->handle);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (PendingRequest* r : batch) names_in_flight_.erase(r->op.name);
  }
  handles_.CompleteAll(ids, status);
}

void Engine::CheckNeighborStalls() {
  const auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_neighbor_stall_check_).count() < 1.0) return;
  last_neighbor_stall_check_ = now;
  neighbor_->CheckStalls(config_.stall_warning_s, config_.stall_shutdown_s);
}

void Engine::FailAllPending(const std::string& reason) {
  for (auto& [name, request] : pending_) Finish(request, Status::Aborted(reason), nullptr);
  pending_.clear();
  unsent_.clear();
}

Clock::time_point Engine::AnnounceDeadline() const {
  // A burst of submissions stays in one announcement: the window closes one
  // cycle after the latest arrival, and at most ten cycles after the first.
  const auto cycle = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(config_.cycle_time_ms));
  return std::min(last_unsent_ + cycle, first_unsent_ + 10 * cycle);
}

Engine::IdlePlan Engine::PlanIdle(bool did_work) {
  const auto now = Clock::now();
  if (did_work || (finished_ && neighbor_->done())) {
    idle_sleep_us_ = 0;
    last_activity_ = now;
    return IdlePlan::Run();
  }
  // The loop spins only for a thread of this rank that waits (a driving
  // caller, or one blocked on a result: any, cheaper to ask than to track, and
  // a thread that waits is not computing). Otherwise its user threads compute,
  // and a spinning loop would take their core.
  const bool someone_waits =
      active_drivers_.load(std::memory_order_relaxed) > 0 || handles_.has_blocked_waiter();
  const NeighborExchange::Transfers transfers = neighbor_->transfers();
  if (transfers.any && someone_waits) {
    // Lanes move only while MPI is polled: large shared-memory messages go
    // fragment by fragment, and the TCP transport pushes and acknowledges
    // fragments only inside MPI calls. Poll as a blocking MPI call would.
    return IdlePlan::Yield();
  }
  if (user_signal_.load(std::memory_order_acquire)) return IdlePlan::Run();
  if (transfers.on_this_host) {
    // Nobody waits: a short pause still keeps shared-memory lanes moving.
    return IdlePlan::Sleep(now + Microseconds(kMinSleepUs));
  }
  if (transfers.any) {
    // Only lanes to other hosts, nobody waiting: bytes arrive at link speed,
    // the kernel's socket buffers keep them moving between polls, and spinning
    // through a whole transfer would take a core from training.
    idle_sleep_us_ = std::clamp(idle_sleep_us_ * 2, kMinSleepUs, kMaxNetworkPollSleepUs);
    return IdlePlan::Sleep(now + Microseconds(idle_sleep_us_));
  }
  // Requests still in the fusion window are not awaited: nothing about them is
  // on its way, and spinning would take the core their submitter needs. (A
  // blocked thread has flushed the window; neighbor calls then count again.)
  // The coordinator spins for the other ranks' waiting threads too.
  const bool coordinating = coordinator_ && coordinator_->pending_names() > 0;
  const bool awaiting = pending_.size() > unsent_.size() ||
                        (neighbor_->busy() && (!neighbor_->has_unsent() || someone_waits)) ||
                        coordinating;
  if (size_ > 1 && awaiting && (someone_waits || coordinating) &&
      now - last_activity_ < kSpinWindow) {
    // A response (or a peer's announcement) is due within microseconds on a
    // shared-memory job: yielding beats any sleep, whose wake-up alone costs
    // tens of microseconds.
    return IdlePlan::Yield();
  }
  // A request, a wait or a stop since the last Step: no sleep. One arriving
  // after this check leaves the parker a wake-up — except a global op joining
  // the window below (which waits for the window's end or a wait by design)
  // and a blocking call's submission (its own wait drives or wakes the loop).
  if (user_signal_.load(std::memory_order_seq_cst)) return IdlePlan::Run();
  const bool must_poll =
      size_ > 1 && (rank_ == 0 || !pending_.empty() || neighbor_->busy() || shutdown_announced_);
  if (!unsent_.empty() || neighbor_->has_unsent()) {
    // Fusion window: sleep until it ends or a thread starts waiting.
    auto deadline = Clock::time_point::max();
    if (!unsent_.empty()) deadline = AnnounceDeadline();
    if (neighbor_->has_unsent()) deadline = std::min(deadline, neighbor_->flush_deadline());
    return IdlePlan::Sleep(deadline, /*gathering=*/true);
  }
  // Nothing in flight. Still look for neighbours' messages now and then: a
  // rank whose call ended must answer a late topology-check notice.
  if (!must_poll) return IdlePlan::Sleep(now + kIdlePollInterval);
  const double waited_us = std::chrono::duration<double, std::micro>(now - last_activity_).count();
  return IdlePlan::Sleep(
      now + Microseconds(std::clamp(waited_us * kSleepFractionOfWait, kMinSleepUs, kMaxSleepUs)));
}

void Engine::Idle(bool did_work) {
  const IdlePlan plan = PlanIdle(did_work);
  if (plan.kind == IdleKind::kRun) return;
  // Yielding or asleep, the engine thread lets a waiting caller take the loop
  // (see TryDrive): a yield on a busy core may last a whole time slice.
  driver_.unlock();
  if (plan.kind == IdleKind::kYield) {
    std::this_thread::yield();
  } else if (plan.gathering) {
    // A submission that still saw gathering_ false has left a wake-up.
    // Sequentially consistent with user_signal_: a submitter that still sees
    // gathering_ set must not race with an engine that cleared it and then
    // misses the submitter's user_signal_ (a Dekker pair).
    gathering_.store(true, std::memory_order_seq_cst);
    wake_.ParkUntil(plan.until);
    gathering_.store(false, std::memory_order_seq_cst);
  } else {
    wake_.ParkUntil(plan.until);
  }
  // While a caller drives, it does this thread's work: sleep until it wakes
  // this thread (see TryDrive: it does when it hands over or leaves work or
  // news behind; after a blocking call that left nothing, the 10 ms idle poll
  // is all this thread needs).
  while (active_drivers_.load(std::memory_order_seq_cst) > 0) wake_.ParkFor(kIdlePollInterval);
  driver_.lock();
}

}  // namespace flock
