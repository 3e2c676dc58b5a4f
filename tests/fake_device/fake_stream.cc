#include "fake_stream.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <utility>

namespace flock::fake {

int64_t DelayMicros() {
  static const int64_t delay = [] {
    const char* text = std::getenv("FAKE_CUDA_DELAY_US");  // test-only knob, not flock's
    return text == nullptr ? int64_t{0} : std::strtoll(text, nullptr, 10);
  }();
  return delay;
}

Stream::Stream(int device) : device_(device), worker_([this] { Run(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void Stream::Enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    ++enqueued_;
  }
  changed_.notify_all();
}

void Stream::Synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = enqueued_;
  changed_.wait(lock, [&] { return done_ >= target; });
}

bool Stream::Idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ == enqueued_;
}

void Stream::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything ran
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (DelayMicros() > 0) std::this_thread::sleep_for(std::chrono::microseconds(DelayMicros()));
    work();
    lock.lock();
    ++done_;
    changed_.notify_all();
  }
}

void Event::Record(Stream& stream) {
  std::shared_ptr<State> state = state_;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    generation = ++state->recorded;
  }
  stream.Enqueue([state, generation] {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (generation > state->completed) state->completed = generation;
    state->reached.notify_all();
  });
}

bool Event::Complete() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed >= state_->recorded;
}

void Event::Synchronize() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const uint64_t target = state_->recorded;
  state_->reached.wait(lock, [&] { return state_->completed >= target; });
}

void Event::MakeWait(Stream& stream) {
  std::shared_ptr<State> state = state_;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    target = state->recorded;
  }
  stream.Enqueue([state, target] {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->reached.wait(lock, [&] { return state->completed >= target; });
  });
}

}  // namespace flock::fake
