#include "flock/engine/request_queue.h"

namespace flock {

void RequestQueue::RequestFlush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_requested_ = true;
  signal_.store(true, std::memory_order_seq_cst);
}

void RequestQueue::RequestStop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stop_requested_ = true;
  signal_.store(true, std::memory_order_release);
}

RequestQueue::Intake RequestQueue::Drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  signal_.store(false, std::memory_order_relaxed);
  drained_.swap(queue_);
  Intake intake{drained_, stop_requested_, flush_requested_ || stop_requested_};
  flush_requested_ = false;
  return intake;
}

void RequestQueue::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_in_flight_.erase(name);
}

void RequestQueue::StopAccepting(std::string why) {
  std::lock_guard<std::mutex> lock(mutex_);
  accepting_ = false;
  refusal_ = std::move(why);
}

}  // namespace flock
