// HandleTable: completion hands results back, and the engine can tell when a
// thread is blocked on an unfinished handle.
#include "flock/engine/handle_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "../support/eventually.h"

namespace flock {
namespace {

using std::chrono::milliseconds;

TEST(HandleTable, ABlockedWaiterIsVisibleUntilItsHandleCompletes) {
  HandleTable table;
  std::atomic<int> listener_calls{0};
  table.SetWaitListener([&] { ++listener_calls; });
  const HandleId id = table.Create(nullptr);
  EXPECT_FALSE(table.has_blocked_waiter());
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    auto completion = table.Wait(id, milliseconds(100), nullptr);
    returned = true;
    ASSERT_TRUE(completion.ok());
    EXPECT_TRUE(completion.value().status.ok());
  });
  EXPECT_TRUE(Eventually([&] { return table.has_blocked_waiter(); }));
  EXPECT_FALSE(returned.load());
  table.Complete(id, Status::OK());
  waiter.join();
  EXPECT_TRUE(returned.load());
  EXPECT_FALSE(table.has_blocked_waiter());
  EXPECT_EQ(listener_calls.load(), 1);
}

TEST(HandleTable, HeldWakeUpsWaitForWakeHeldButTheWaiterStopsCountingAtOnce) {
  HandleTable table(/*hold_wakes=*/true);
  const HandleId id = table.Create(nullptr);
  std::atomic<bool> returned{false};
  // A long poll interval: only an Unpark returns the waiter within the test.
  std::thread waiter([&] {
    auto completion = table.Wait(id, milliseconds(60000), nullptr);
    returned = true;
    ASSERT_TRUE(completion.ok());
  });
  ASSERT_TRUE(Eventually([&] { return table.has_blocked_waiter(); }));
  table.Complete(id, Status::OK());
  EXPECT_TRUE(table.has_held_wakes());
  // Done, so nobody is blocked on an unfinished handle any more ...
  EXPECT_FALSE(table.has_blocked_waiter());
  // ... but the waiter sleeps until the wake-up is released.
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load());
  table.WakeHeld();
  EXPECT_FALSE(table.has_held_wakes());
  EXPECT_TRUE(Eventually([&] { return returned.load(); }));
  waiter.join();
}

TEST(HandleTable, AnInterruptedWaitStopsCountingAsBlocked) {
  HandleTable table;
  const HandleId id = table.Create(nullptr);
  std::atomic<bool> interrupt{false};
  std::thread waiter([&] {
    auto completion = table.Wait(id, milliseconds(1), [&] {
      return interrupt.load() ? Status::Aborted("interrupted") : Status::OK();
    });
    EXPECT_FALSE(completion.ok());
  });
  EXPECT_TRUE(Eventually([&] { return table.has_blocked_waiter(); }));
  interrupt = true;
  waiter.join();
  EXPECT_FALSE(table.has_blocked_waiter());
  table.Complete(id, Status::OK());  // the handle is still there to finish and collect
  EXPECT_TRUE(table.Wait(id, milliseconds(100), nullptr).ok());
}

TEST(HandleTable, CollectingAFinishedHandleNeitherBlocksNorTellsTheEngine) {
  HandleTable table;
  std::atomic<int> listener_calls{0};
  table.SetWaitListener([&] { ++listener_calls; });
  const HandleId id = table.Create(nullptr);
  table.Complete(id, Status::Aborted("done early"));
  auto completion = table.Wait(id, milliseconds(100), nullptr);
  ASSERT_TRUE(completion.ok());
  EXPECT_FALSE(completion.value().status.ok());
  EXPECT_EQ(listener_calls.load(), 0);
  EXPECT_FALSE(table.has_blocked_waiter());
  EXPECT_FALSE(table.Wait(id, milliseconds(100), nullptr).ok());  // already collected
}

}  // namespace
}  // namespace flock
