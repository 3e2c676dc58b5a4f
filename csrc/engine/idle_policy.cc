#include "flock/engine/idle_policy.h"

#include <algorithm>

namespace flock {
namespace {

using Clock = IdleView::Clock;

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
// How often an engine with nothing in flight looks for neighbours' messages.
constexpr auto kIdlePollInterval = std::chrono::milliseconds(10);

std::chrono::nanoseconds Microseconds(double us) {
  return std::chrono::nanoseconds(static_cast<int64_t>(us * 1000));
}

// Lanes in flight: MPI moves them only while polled.
IdlePlan PlanForLanes(const IdleView& v, IdleState& state) {
  if (v.lanes_on_this_host) {
    // Nobody waits: a short pause still keeps shared-memory lanes moving.
    return IdlePlan::Sleep(v.now + Microseconds(kMinSleepUs));
  }
  // Only lanes to other hosts, nobody waiting: bytes arrive at link speed,
  // the kernel's socket buffers keep them moving between polls, and spinning
  // through a whole transfer would take a core from training.
  state.sleep_us = std::clamp(state.sleep_us * 2, kMinSleepUs, kMaxNetworkPollSleepUs);
  return IdlePlan::Sleep(v.now + Microseconds(state.sleep_us));
}

// Nothing moving: wait for a response, the fusion window's end, or work.
IdlePlan PlanForQuiet(const IdleView& v, const IdleState& state) {
  // Requests still in the fusion window are not awaited: nothing about them is
  // on its way, and spinning would take the core their submitter needs. (A
  // blocked thread has flushed the window; neighbor calls then count again.)
  // The coordinator spins for the other ranks' waiting threads too.
  const bool awaiting = v.awaiting_response ||
                        (v.neighbor_busy && (!v.neighbor_unsent || v.someone_waits)) ||
                        v.coordinating;
  if (v.size > 1 && awaiting && (v.someone_waits || v.coordinating) &&
      v.now - state.last_activity < kSpinWindow) {
    // A response (or a peer's announcement) is due within microseconds on a
    // shared-memory job: yielding beats any sleep, whose wake-up alone costs
    // tens of microseconds.
    return IdlePlan::Yield();
  }
  if (v.unsent || v.neighbor_unsent) {
    // Fusion window: sleep until it ends or a thread starts waiting.
    auto deadline = Clock::time_point::max();
    if (v.unsent) deadline = v.announce_deadline;
    if (v.neighbor_unsent) deadline = std::min(deadline, v.neighbor_flush_deadline);
    return IdlePlan::Sleep(deadline, /*gathering=*/true);
  }
  // While windows exist, other ranks' puts and gets are served without this
  // rank's threads: a message arriving after W is seen within ~W/8 (at most 1 ms).
  const bool must_poll = v.size > 1 && (v.rank == 0 || v.requests_pending || v.neighbor_busy ||
                                        v.shutdown_announced || v.windows_open);
  // Nothing in flight. Still look for neighbours' messages now and then: a
  // rank whose call ended must answer a late topology-check notice.
  if (!must_poll) return IdlePlan::Sleep(v.now + kIdlePollInterval);
  const double waited_us =
      std::chrono::duration<double, std::micro>(v.now - state.last_activity).count();
  return IdlePlan::Sleep(
      v.now + Microseconds(std::clamp(waited_us * kSleepFractionOfWait, kMinSleepUs, kMaxSleepUs)));
}

}  // namespace

IdlePlan PlanIdle(const IdleView& v, IdleState& state) {
  if (v.did_work || v.all_done) {
    state.sleep_us = 0;
    state.last_activity = v.now;
    return IdlePlan::Run();
  }
  // The loop spins only for a thread of this rank that waits. Otherwise its
  // user threads compute, and a spinning loop would take their core.
  if (v.lanes_in_flight && v.someone_waits) {
    // Large shared-memory messages go fragment by fragment, and the TCP
    // transport pushes and acknowledges fragments only inside MPI calls:
    // poll as a blocking MPI call would.
    return IdlePlan::Yield();
  }
  if (v.user_signal) return IdlePlan::Run();
  if (v.lanes_in_flight) return PlanForLanes(v, state);
  return PlanForQuiet(v, state);
}

}  // namespace flock
