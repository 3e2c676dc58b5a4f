// RequestQueue: user threads push while the loop drains (run under
// ThreadSanitizer by the test command); a name is in flight at most once; a
// flush or a stop reaches the loop; a stopped queue refuses with its reason.
#include "flock/engine/request_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace flock {
namespace {

Status PushNamed(RequestQueue& queue, const std::string& name, HandleId handle) {
  return queue.Push(name, "allreduce", [&](PendingRequest& request) {
    request.handle = handle;
    request.op.name = name;
  });
}

TEST(RequestQueue, ManyThreadsPushWhileTheLoopDrainsAndNothingIsLostOrDoubled) {
  constexpr int kThreads = 4, kPerThread = 2000;
  RequestQueue queue;
  std::atomic<int> pushed_done{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string name = "t" + std::to_string(t) + "." + std::to_string(i);
        ASSERT_TRUE(PushNamed(queue, name, t * kPerThread + i + 1).ok());
        if (i % 97 == 0) queue.RequestFlush();
      }
      pushed_done.fetch_add(1);
    });
  }
  std::set<HandleId> seen;
  bool flushed = false;
  while (pushed_done.load() < kThreads || queue.signaled()) {
    if (!queue.signaled()) {
      std::this_thread::yield();
      continue;
    }
    RequestQueue::Intake intake = queue.Drain();
    flushed |= intake.flush;
    EXPECT_FALSE(intake.stop);
    for (const PendingRequest& r : intake.requests) {
      EXPECT_TRUE(seen.insert(r.handle).second) << "handle " << r.handle << " drained twice";
      queue.Release(r.op.name);
    }
    intake.requests.clear();
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_TRUE(flushed);
}

TEST(RequestQueue, ANameInFlightIsRefusedUntilReleased) {
  RequestQueue queue;
  ASSERT_TRUE(PushNamed(queue, "grad", 1).ok());
  bool made = false;
  Status again = queue.Push("grad", "allreduce", [&](PendingRequest&) { made = true; });
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("allreduce 'grad': a request with this name is still in flight"),
            std::string::npos)
      << again.message();
  EXPECT_FALSE(made);  // a refused request makes no handle
  RequestQueue::Intake intake = queue.Drain();
  ASSERT_EQ(intake.requests.size(), 1u);
  intake.requests.clear();
  EXPECT_FALSE(PushNamed(queue, "grad", 2).ok());  // drained is not done
  queue.Release("grad");
  EXPECT_TRUE(PushNamed(queue, "grad", 3).ok());
}

TEST(RequestQueue, AStopFlushesAndAStoppedQueueRefusesWithItsReason) {
  RequestQueue queue;
  EXPECT_FALSE(queue.signaled());
  queue.RequestStop();
  EXPECT_TRUE(queue.signaled());
  RequestQueue::Intake intake = queue.Drain();
  EXPECT_TRUE(intake.stop);
  EXPECT_TRUE(intake.flush);
  EXPECT_FALSE(queue.signaled());
  queue.StopAccepting("flock has been shut down");
  Status refused = PushNamed(queue, "late", 9);
  EXPECT_EQ(refused.code(), StatusCode::kAborted);
  EXPECT_EQ(refused.message(), "flock has been shut down");
}

}  // namespace
}  // namespace flock
