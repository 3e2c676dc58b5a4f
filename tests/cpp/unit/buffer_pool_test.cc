// BufferPool: blocks come back for reuse (no fresh pages), best fit within 2x,
// the free-bytes cap, idle blocks freed, and move-only buffers that return themselves.
#include "flock/common/buffer_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <utility>

namespace flock {
namespace {

TEST(BufferPool, AFreedBlockIsReusedForTheNextRequestThatFits) {
  BufferPool pool;
  char* first = nullptr;
  {
    PooledBuffer a = pool.Acquire(1 << 20);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(a.size(), size_t{1} << 20);
    first = a.data();
  }
  EXPECT_EQ(pool.free_bytes(), size_t{1} << 20);
  PooledBuffer b = pool.Acquire(900 << 10);  // fits, and within 2x
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(b.size(), size_t{900} << 10);
  EXPECT_EQ(pool.free_bytes(), 0u);
}

TEST(BufferPool, ASmallRequestDoesNotTakeAMuchLargerBlock) {
  BufferPool pool;
  pool.Acquire(1 << 20).Release();
  PooledBuffer small = pool.Acquire(4096);
  EXPECT_EQ(pool.free_bytes(), size_t{1} << 20);  // the large block stays free
  PooledBuffer large = pool.Acquire(1 << 20);
  EXPECT_EQ(pool.free_bytes(), 0u);
}

TEST(BufferPool, KeepsAtMostTheCapAndMovesOwnership) {
  BufferPool pool(3000);
  PooledBuffer a = pool.Acquire(2000), b = pool.Acquire(2000);
  PooledBuffer moved = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  moved.Release();
  b.Release();  // over the cap: freed, not kept
  EXPECT_EQ(pool.free_bytes(), 2000u);
  EXPECT_EQ(pool.Acquire(0).data(), nullptr);
}

TEST(BufferPool, ABlockUnusedForTheIdleLimitIsFreed) {
  BufferPool pool(size_t{1} << 30, std::chrono::milliseconds(200));
  pool.Acquire(1 << 20).Release();
  pool.Acquire(4096).Release();  // a recent give-back does not keep the old block
  EXPECT_EQ(pool.free_bytes(), (size_t{1} << 20) + 4096);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  pool.Acquire(4096).Release();  // reused: its idle time starts again
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  pool.Acquire(100).Release();  // the 1 MiB block has idled 240 ms: freed
  EXPECT_EQ(pool.free_bytes(), 4096u + 100u);
}

}  // namespace
}  // namespace flock
