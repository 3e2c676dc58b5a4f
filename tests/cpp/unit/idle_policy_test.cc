// The engine's idle decision as a table: after a Step, run again, yield the
// core, or sleep until when — for each situation the loop can be in.
#include "flock/engine/idle_policy.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace flock {
namespace {

using Clock = IdleView::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

const Clock::time_point kNow = Clock::time_point() + std::chrono::hours(1);

struct Row {
  std::string situation;
  std::function<void(IdleView&, IdleState&)> set;
  IdleKind kind;
  Clock::duration sleep = {};  // kSleep: until - now
  bool gathering = false;
};

IdleView Quiet() {
  IdleView v;
  v.now = kNow;
  v.size = 4;
  v.rank = 1;
  return v;
}

std::vector<Row> Rows() {
  const auto window = kNow + milliseconds(3);
  return {
      {"work was done", [](IdleView& v, IdleState&) { v.did_work = true; }, IdleKind::kRun},
      {"the loop is finished", [](IdleView& v, IdleState&) { v.all_done = true; }, IdleKind::kRun},
      {"lanes move and someone waits",
       [](IdleView& v, IdleState&) { v.lanes_in_flight = v.someone_waits = true; },
       IdleKind::kYield},
      {"a submission arrived", [](IdleView& v, IdleState&) { v.user_signal = true; },
       IdleKind::kRun},
      {"lanes on this host, nobody waits",
       [](IdleView& v, IdleState&) { v.lanes_in_flight = v.lanes_on_this_host = true; },
       IdleKind::kSleep, microseconds(10)},
      {"lanes across a network back off, doubling",
       [](IdleView& v, IdleState& s) {
         v.lanes_in_flight = true;
         s.sleep_us = 20;
       },
       IdleKind::kSleep, microseconds(40)},
      {"the network back-off is capped at 100 us",
       [](IdleView& v, IdleState& s) {
         v.lanes_in_flight = true;
         s.sleep_us = 80;
       },
       IdleKind::kSleep, microseconds(100)},
      {"a response is due and someone waits: spin for 200 us",
       [](IdleView& v, IdleState& s) {
         v.awaiting_response = v.someone_waits = v.requests_pending = true;
         s.last_activity = kNow - microseconds(150);
       },
       IdleKind::kYield},
      {"... then sleep an eighth of the time waited",
       [](IdleView& v, IdleState& s) {
         v.awaiting_response = v.someone_waits = v.requests_pending = true;
         s.last_activity = kNow - microseconds(800);
       },
       IdleKind::kSleep, microseconds(100)},
      {"... at most 1 ms",
       [](IdleView& v, IdleState& s) {
         v.awaiting_response = v.requests_pending = true;
         s.last_activity = kNow - milliseconds(50);
       },
       IdleKind::kSleep, milliseconds(1)},
      {"a response is due but nobody waits: no spinning",
       [](IdleView& v, IdleState& s) {
         v.awaiting_response = v.requests_pending = true;
         s.last_activity = kNow - microseconds(100);
       },
       IdleKind::kSleep, std::chrono::nanoseconds(12500)},
      {"one rank alone never spins",
       [](IdleView& v, IdleState& s) {
         v.size = 1;
         v.awaiting_response = v.someone_waits = v.requests_pending = true;
         s.last_activity = kNow;
       },
       IdleKind::kSleep, milliseconds(10)},
      {"the coordinator spins for other ranks' announcements",
       [](IdleView& v, IdleState& s) {
         v.rank = 0;
         v.coordinating = true;
         s.last_activity = kNow - microseconds(50);
       },
       IdleKind::kYield},
      {"global requests in the fusion window: sleep to its end",
       [window](IdleView& v, IdleState& s) {
         v.unsent = v.requests_pending = true;
         v.announce_deadline = window;
         s.last_activity = kNow - milliseconds(1);
       },
       IdleKind::kSleep, milliseconds(3), true},
      {"neighbour entries in the outbox: the earlier deadline",
       [window](IdleView& v, IdleState&) {
         v.unsent = v.neighbor_unsent = v.neighbor_busy = true;
         v.announce_deadline = window;
         v.neighbor_flush_deadline = kNow + milliseconds(1);
       },
       IdleKind::kSleep, milliseconds(1), true},
      {"neighbour steps waiting for peers, outbox sent, nobody waits",
       [](IdleView& v, IdleState& s) {
         v.neighbor_busy = true;
         s.last_activity = kNow - microseconds(400);
       },
       IdleKind::kSleep, microseconds(50)},
      {"nothing in flight on a worker: look for late notices every 10 ms",
       [](IdleView&, IdleState&) {}, IdleKind::kSleep, milliseconds(10)},
      {"nothing in flight on rank 0: keep polling for announcements",
       [](IdleView& v, IdleState& s) {
         v.rank = 0;
         s.last_activity = kNow - milliseconds(2);
       },
       IdleKind::kSleep, microseconds(250)},
  };
}

TEST(IdlePolicy, DecidesAsTheTableSays) {
  for (const Row& row : Rows()) {
    IdleView view = Quiet();
    IdleState state;
    state.last_activity = kNow - std::chrono::seconds(1);
    row.set(view, state);
    const IdlePlan plan = PlanIdle(view, state);
    EXPECT_EQ(static_cast<int>(plan.kind), static_cast<int>(row.kind)) << row.situation;
    if (row.kind != IdleKind::kSleep) continue;
    EXPECT_EQ(plan.until - kNow, row.sleep)
        << row.situation << ": slept "
        << std::chrono::duration_cast<microseconds>(plan.until - kNow).count() << " us";
    EXPECT_EQ(plan.gathering, row.gathering) << row.situation;
  }
}

TEST(IdlePolicy, WorkResetsTheBackOffAndMarksActivity) {
  IdleView view = Quiet();
  IdleState state;
  state.sleep_us = 100;
  view.did_work = true;
  PlanIdle(view, state);
  EXPECT_EQ(state.sleep_us, 0);
  EXPECT_EQ(state.last_activity, kNow);
  view.did_work = false;
  view.lanes_in_flight = true;
  EXPECT_EQ(PlanIdle(view, state).until - kNow, microseconds(10));  // starts small again
}

}  // namespace
}  // namespace flock
