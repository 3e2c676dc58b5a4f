// A fake device's stream: work items run in order on a worker thread of their
// own, as a GPU runs a stream's work after the host enqueued it. An optional
// delay before each item (FAKE_CUDA_DELAY_US) makes the host run well ahead,
// so a missing stream wait or event shows up as stale data in the tests.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace flock::fake {

class Stream {
 public:
  explicit Stream(int device);
  ~Stream();  // finishes what is queued
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void Enqueue(std::function<void()> work);
  void Synchronize();  // until everything enqueued so far has run
  bool Idle();         // nothing queued or running (cudaStreamQuery)
  int device() const { return device_; }

 private:
  void Run();

  const int device_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0, done_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

// An event: recording enqueues a marker; the event is complete once the
// marker of its latest record has run. A wait captures that record. Queued
// markers and waits share the state, so an event may be destroyed while they
// are pending (as cudaEventDestroy allows).
class Event {
 public:
  // Enqueues the marker on `stream`.
  void Record(Stream& stream);
  bool Complete();
  void Synchronize();
  // Makes `stream`'s later work wait for this event's latest record.
  void MakeWait(Stream& stream);

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable reached;
    uint64_t recorded = 0, completed = 0;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Microseconds each stream item waits before it runs (FAKE_CUDA_DELAY_US; 0 by default).
int64_t DelayMicros();

}  // namespace flock::fake
