// Who runs the engine's loop and when it pauses: a waiting caller driving it
// (Wait, TryDrive), and the decision after each Step to run on, yield or sleep
// (PlanIdle, Idle). See "Who runs the loop" and "Spinning only for a waiter"
// in engine.h.
#include <algorithm>
#include <thread>

#include "flock/engine/engine.h"

namespace flock {
namespace {

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
// The same on ranks that share cores, where a handover costs more: each of
// its two wake-ups waits for a core that the other ranks keep busy, and a peer
// late by a millisecond is mostly one busy with its own copies (the A/B is in
// docs/performance/neighbor-history.md). The cap lets a caller whose peer
// really computes stop spinning, and see Ctrl-C in HandleTable::Wait.
constexpr auto kMaxDriveOnSharedCores = std::chrono::milliseconds(100);
// How often an engine with nothing in flight looks for neighbours' messages.
constexpr auto kIdlePollInterval = std::chrono::milliseconds(10);

std::chrono::nanoseconds Microseconds(double us) {
  return std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
}

}  // namespace

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
  const auto give_up = Clock::now() + (shares_cores_ ? kMaxDriveOnSharedCores : kMaxDrive);
  bool done = false;
  while (!finished_ && Clock::now() < give_up) {
    const Result<bool> finished = handles_.IsDone(id);
    done = !finished.ok() || finished.value();
    if (done) break;
    const IdlePlan plan = PlanIdle(Step());
    // Other threads' ops this drive finished: wake them now, not when it ends.
    handles_.WakeHeld();
    // Where the engine thread would sleep (nothing came for a while), a caller
    // on ranks that share cores yields and polls on: the peer it waits for
    // often just has not had a core yet, and a sleep would cost a wake-up
    // later (4 ranks on 2 cores, 1 MiB: 1.07-1.14x the Isend/Irecv floor when
    // it slept, 1.00-1.03x polling on). With a core of its own, it
    // hands over: spinning there would take a core from the user's threads.
    if (plan.kind == IdleKind::kSleep && !shares_cores_) break;
    if (plan.kind != IdleKind::kRun) std::this_thread::yield();
  }
  if (done) ++counters_.driven_done;
  // The engine thread sleeps until a driver wakes it: when this one hands
  // over, or leaves work in flight (a blocking call usually leaves none; what
  // other ranks announce later reaches the coordinator with this rank's own
  // announcement, which wakes it).
  const bool wake_engine = !done || !pending_.empty() || !unsent_.empty() || neighbor_->busy() ||
                           neighbor_->has_unsent() || (shutdown_announced_ && !finished_);
  driving.unlock();
  handles_.WakeHeld();
  // Counted down after unlocking: the engine thread, asleep until it sees no
  // driver, then usually finds the lock free (no futex call to wake it).
  active_drivers_.fetch_sub(1, std::memory_order_seq_cst);
  // A submission, a wait or a stop since this driver's last Step woke an
  // engine thread that went back to sleep because a driver was active: wake
  // it again (seq_cst with its check of active_drivers_).
  if (wake_engine || user_signal_.load(std::memory_order_seq_cst)) wake_.Unpark();
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
  if (plan.kind == IdleKind::kRun) {
    if (!handles_.has_held_wakes()) return;
    // A woken caller may take this thread's core at once: let go of the loop
    // first, so that it can drive rather than wait for this thread.
    driver_.unlock();
    handles_.WakeHeld();
    Relock();
    return;
  }
  // Yielding or asleep, the engine thread lets a waiting caller take the loop
  // (see TryDrive): a yield on a busy core may last a whole time slice.
  driver_.unlock();
  handles_.WakeHeld();
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
  Relock();
}

void Engine::Relock() {
  while (active_drivers_.load(std::memory_order_seq_cst) > 0) wake_.ParkFor(kIdlePollInterval);
  driver_.lock();
}

}  // namespace flock
