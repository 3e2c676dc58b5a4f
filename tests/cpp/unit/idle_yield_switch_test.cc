// IdleYieldSwitch against a fake of OpenMPI's setter: yielding is off only
// inside polling passes, back on for blocking calls, and never touched when
// it was not configured.
#include "flock/transport/mpi/idle_yield_switch.h"

#include <gtest/gtest.h>

#include <memory>

namespace flock {
namespace {

// The fake's state: what opal_progress_yield_when_idle would hold.
bool yield_when_idle = false;
int set_calls = 0;

bool FakeSet(bool value) {
  const bool previous = yield_when_idle;
  yield_when_idle = value;
  ++set_calls;
  return previous;
}

IdleYieldSwitch::SetFn Configured(bool value) {
  yield_when_idle = value;
  set_calls = 0;
  return &FakeSet;
}

TEST(IdleYieldSwitch, OffOnlyInsideAPassAndNestedPassesEndWithTheOuterOne) {
  IdleYieldSwitch idle_yield(Configured(true));
  ASSERT_TRUE(idle_yield.active());
  EXPECT_TRUE(yield_when_idle) << "reading the setting must put it back";
  idle_yield.BeginPolling();
  EXPECT_FALSE(yield_when_idle);
  idle_yield.BeginPolling();
  idle_yield.EndPolling();
  EXPECT_FALSE(yield_when_idle) << "the outer pass is still on";
  idle_yield.EndPolling();
  EXPECT_TRUE(yield_when_idle);
}

TEST(IdleYieldSwitch, ABlockingCallInsideAPassYieldsAsConfigured) {
  IdleYieldSwitch idle_yield(Configured(true));
  idle_yield.BeginPolling();
  {
    IdleYieldSwitch::Blocking blocking(idle_yield);
    EXPECT_TRUE(yield_when_idle);
    {
      IdleYieldSwitch::Blocking nested(idle_yield);
      EXPECT_TRUE(yield_when_idle);
    }
    EXPECT_TRUE(yield_when_idle) << "the outer blocking call is still waiting";
  }
  EXPECT_FALSE(yield_when_idle) << "back to polling";
  idle_yield.EndPolling();
  EXPECT_TRUE(yield_when_idle);
}

TEST(IdleYieldSwitch, APassThatStartsDuringABlockingCallLeavesItYielding) {
  // Another thread is inside a blocking call when the loop starts a pass.
  IdleYieldSwitch idle_yield(Configured(true));
  auto blocking = std::make_unique<IdleYieldSwitch::Blocking>(idle_yield);
  idle_yield.BeginPolling();
  EXPECT_TRUE(yield_when_idle);
  blocking.reset();
  EXPECT_FALSE(yield_when_idle) << "the blocking call ended inside the pass";
  idle_yield.EndPolling();
  EXPECT_TRUE(yield_when_idle);
}

TEST(IdleYieldSwitch, NothingIsSwitchedWhenYieldingIsNotConfigured) {
  IdleYieldSwitch idle_yield(Configured(false));
  EXPECT_FALSE(idle_yield.active());
  const int reads = set_calls;
  idle_yield.BeginPolling();
  { IdleYieldSwitch::Blocking blocking(idle_yield); }
  idle_yield.EndPolling();
  EXPECT_FALSE(yield_when_idle);
  EXPECT_EQ(set_calls, reads) << "only the initial read may call the setter";
}

TEST(IdleYieldSwitch, WithoutASetterEverythingIsANoOp) {
  IdleYieldSwitch idle_yield(nullptr);
  EXPECT_FALSE(idle_yield.active());
  idle_yield.BeginPolling();
  { IdleYieldSwitch::Blocking blocking(idle_yield); }
  idle_yield.EndPolling();
}

}  // namespace
}  // namespace flock
