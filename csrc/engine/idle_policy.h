// IdlePolicy: what the engine's loop does after a Step — run again, yield the
// core, or sleep until when (pure: it reads an IdleView of the loop's state).
// See "Spinning only for a waiter" in engine.h for the rules and their reasons;
// tests/cpp/unit/idle_policy_test.cc has them as a table.
#pragma once

#include <chrono>

namespace flock {

enum class IdleKind { kRun, kYield, kSleep };

struct IdlePlan {
  using Clock = std::chrono::steady_clock;
  IdleKind kind = IdleKind::kRun;
  Clock::time_point until;  // kSleep
  bool gathering = false;   // kSleep through a fusion window (see Engine::gathering_)

  static IdlePlan Run() { return {}; }
  static IdlePlan Yield() { return {IdleKind::kYield, {}, false}; }
  static IdlePlan Sleep(Clock::time_point until, bool gathering = false) {
    return {IdleKind::kSleep, until, gathering};
  }
};

// What the decision reads, taken by the loop after a Step.
struct IdleView {
  using Clock = std::chrono::steady_clock;
  Clock::time_point now;
  bool did_work = false;
  bool all_done = false;       // finished, and the neighbour exchange too: the loop ends
  bool someone_waits = false;  // a caller drives or a thread is blocked on a result
  bool user_signal = false;    // a submission, wait or stop not yet seen by the loop
  bool lanes_in_flight = false;
  bool lanes_on_this_host = false;
  int size = 1;
  int rank = 0;
  bool awaiting_response = false;  // announced global requests without an answer
  bool neighbor_busy = false;      // neighbour steps (or window ops) in flight
  bool windows_open = false;       // windows exist: other ranks may put or get any time
  bool neighbor_unsent = false;    // neighbour entries in the outbox
  bool coordinating = false;       // rank 0: other ranks' announcements pending
  bool requests_pending = false;   // global requests in flight, announced or not
  bool shutdown_announced = false;
  bool unsent = false;  // global requests in the fusion window
  Clock::time_point announce_deadline;
  Clock::time_point neighbor_flush_deadline;
};

// Carried from one decision to the next.
struct IdleState {
  double sleep_us = 0;  // the last back-off while lanes cross a network
  IdleView::Clock::time_point last_activity;
};

IdlePlan PlanIdle(const IdleView& view, IdleState& state);

}  // namespace flock
