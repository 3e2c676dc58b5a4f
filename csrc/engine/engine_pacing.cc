// Who runs the engine's loop and when it pauses: a waiting caller driving it
// (Wait, TryDrive), and acting on the decision after each Step to run on,
// yield or sleep (PlanIdle gathers its inputs; idle_policy.cc decides). See "Who runs the loop" and
// "Spinning only for a waiter" in engine.h.
#include <algorithm>
#include <thread>

#include "flock/engine/engine.h"

namespace flock {
namespace {

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
  const bool wake_engine = !done || !negotiator_.empty() || negotiator_.has_unsent() ||
                           neighbor_->busy() || neighbor_->has_unsent() ||
                           (shutdown_announced_ && !finished_);
  driving.unlock();
  handles_.WakeHeld();
  // Counted down after unlocking: the engine thread, asleep until it sees no
  // driver, then usually finds the lock free (no futex call to wake it).
  active_drivers_.fetch_sub(1, std::memory_order_seq_cst);
  // A submission, a wait or a stop since this driver's last Step woke an
  // engine thread that went back to sleep because a driver was active: wake
  // it again (seq_cst with its check of active_drivers_).
  if (wake_engine || requests_.signaled()) wake_.Unpark();
}

IdlePlan Engine::PlanIdle(bool did_work) {
  IdleView v;
  v.now = Clock::now();
  v.did_work = did_work;
  v.all_done = finished_ && neighbor_->done();
  // Any thread blocked on a result: cheaper to ask than to track, and a
  // thread that waits is not computing.
  v.someone_waits =
      active_drivers_.load(std::memory_order_relaxed) > 0 || handles_.has_blocked_waiter();
  v.user_signal = requests_.signaled(std::memory_order_acquire);
  const NeighborExchange::Transfers transfers = neighbor_->transfers();
  v.lanes_in_flight = transfers.any;
  v.lanes_on_this_host = transfers.on_this_host;
  v.size = size_;
  v.rank = rank_;
  v.awaiting_response = negotiator_.awaiting_response();
  v.neighbor_busy = neighbor_->busy() || windows_->busy();
  v.windows_open = windows_->open();
  v.neighbor_unsent = neighbor_->has_unsent();
  v.coordinating = coordinator_ && coordinator_->pending_names() > 0;
  v.requests_pending = !negotiator_.empty();
  v.shutdown_announced = shutdown_announced_;
  v.unsent = negotiator_.has_unsent();
  if (v.unsent) v.announce_deadline = negotiator_.announce_deadline();
  if (v.neighbor_unsent) v.neighbor_flush_deadline = neighbor_->flush_deadline();
  IdlePlan plan = flock::PlanIdle(v, idle_state_);
  // A request, a wait or a stop since the last Step: no sleep. One arriving
  // after this check leaves the parker a wake-up — except a global op joining
  // a fusion window (which waits for the window's end or a wait by design)
  // and a blocking call's submission (its own wait drives or wakes the loop).
  if (plan.kind == IdleKind::kSleep && requests_.signaled()) return IdlePlan::Run();
  return plan;
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
    // A submission that still saw `gathering` false has left a wake-up (see
    // RequestQueue: the flag and the signal are a Dekker pair).
    requests_.SetGathering(true);
    wake_.ParkUntil(plan.until);
    requests_.SetGathering(false);
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
