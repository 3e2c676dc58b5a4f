// BufferPool: scratch memory reused across calls instead of allocated afresh.
//
// Why: a fresh large allocation comes from the kernel as untouched pages, and
// the first write to each page faults; on virtual machines that costs about
// 3 ms per MiB (measured here), more than moving the bytes. Buffers that
// neighbor ops need per call (a lane's landing buffer, an in-place or
// float16 accumulator, the hierarchical op's slices) are therefore taken from
// the pool and given back when the call ends. Contents are uninitialized.
//
// Acquire finds the smallest free block that fits (and is at most twice the
// size asked, so a small request does not hold a large block) or allocates
// one; freed blocks are kept while the free bytes stay under `keep_bytes`,
// and a block left unused for `max_idle` is freed (checked at most every
// max_idle / 4, on Acquire and on give-back): a training loop reuses the same
// sizes every step, while sizes seen once must not stay resident for good.
// Thread-safe; a PooledBuffer must not outlive its pool.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace flock {

class BufferPool;

class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&& other) noexcept { *this = std::move(other); }
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  ~PooledBuffer() { Release(); }

  char* data() const { return block_.get(); }
  size_t size() const { return size_; }
  void Release();  // back to the pool (or freed); the buffer is empty afterwards

 private:
  friend class BufferPool;
  BufferPool* pool_ = nullptr;
  std::unique_ptr<char[]> block_;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

class BufferPool {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDefaultMaxIdle{10000};

  explicit BufferPool(size_t keep_bytes = size_t{512} << 20,
                      std::chrono::milliseconds max_idle = kDefaultMaxIdle)
      : keep_bytes_(keep_bytes), max_idle_(max_idle), next_sweep_(Clock::now() + max_idle / 4) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  PooledBuffer Acquire(size_t bytes);
  size_t free_bytes() const;
  // Frees every idle block now; returns the bytes freed.
  size_t FreeIdle();

 private:
  friend class PooledBuffer;
  struct FreeBlock {
    std::unique_ptr<char[]> block;
    Clock::time_point since;  // given back at
  };
  void Give(std::unique_ptr<char[]> block, size_t capacity);
  void FreeIdleBlocksLocked(Clock::time_point now);

  const size_t keep_bytes_;
  const std::chrono::milliseconds max_idle_;
  mutable std::mutex mutex_;
  std::multimap<size_t, FreeBlock> free_;  // by capacity
  size_t free_bytes_ = 0;
  Clock::time_point next_sweep_;
};

}  // namespace flock
