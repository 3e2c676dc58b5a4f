#include "flock/common/buffer_pool.h"

#include <utility>

namespace flock {

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    block_ = std::move(other.block_);
    capacity_ = std::exchange(other.capacity_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PooledBuffer::Release() {
  if (block_ != nullptr && pool_ != nullptr) pool_->Give(std::move(block_), capacity_);
  block_.reset();
  pool_ = nullptr;
  capacity_ = size_ = 0;
}

PooledBuffer BufferPool::Acquire(size_t bytes) {
  PooledBuffer buffer;
  buffer.pool_ = this;
  buffer.size_ = bytes;
  if (bytes == 0) return buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    FreeIdleBlocksLocked(Clock::now());
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes) {
      buffer.capacity_ = it->first;
      buffer.block_ = std::move(it->second.block);
      free_bytes_ -= it->first;
      free_.erase(it);
      return buffer;
    }
  }
  buffer.block_.reset(new char[bytes]);  // uninitialized on purpose
  buffer.capacity_ = bytes;
  return buffer;
}

void BufferPool::Give(std::unique_ptr<char[]> block, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto now = Clock::now();
  FreeIdleBlocksLocked(now);
  if (free_bytes_ + capacity > keep_bytes_) return;  // freed when `block` goes
  free_bytes_ += capacity;
  free_.emplace(capacity, FreeBlock{std::move(block), now});
}

void BufferPool::FreeIdleBlocksLocked(Clock::time_point now) {
  if (now < next_sweep_) return;
  next_sweep_ = now + max_idle_ / 4;
  for (auto it = free_.begin(); it != free_.end();) {
    if (now - it->second.since < max_idle_) {
      ++it;
      continue;
    }
    free_bytes_ -= it->first;
    it = free_.erase(it);
  }
}

size_t BufferPool::FreeIdle() {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t freed = free_bytes_;
  free_.clear();
  free_bytes_ = 0;
  return freed;
}

size_t BufferPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_bytes_;
}

}  // namespace flock
