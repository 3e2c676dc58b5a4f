#include "flock/window/window.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "flock/common/reduce_kernels.h"

namespace flock {

Window::Window(WindowSpec spec, BufferPool& pool, std::function<void()> notify_engine)
    : spec_(std::move(spec)),
      count_(spec_.self.num_elements()),
      bytes_(spec_.self.size_bytes()),
      pool_(pool),
      locks_(std::move(notify_engine)),
      versions_(spec_.in_neighbors.size(), 0),
      p_(spec_.in_neighbors.size(), 0.0) {
  for (size_t i = 0; i < spec_.in_neighbors.size(); ++i) {
    WindowBuffer slot = spec_.zero_init ? ZeroBuffer() : NewBuffer();
    if (!spec_.zero_init && bytes_ > 0) std::memcpy(slot->data(), spec_.self.data, bytes_);
    data_.push_back(std::move(slot));
  }
}

bool Window::is_out_neighbor(int rank) const {
  return std::binary_search(spec_.out_neighbors.begin(), spec_.out_neighbors.end(), rank);
}

int Window::SlotIndex(int rank) const {
  auto it = std::lower_bound(spec_.in_neighbors.begin(), spec_.in_neighbors.end(), rank);
  if (it == spec_.in_neighbors.end() || *it != rank) return -1;
  return static_cast<int>(it - spec_.in_neighbors.begin());
}

WindowBuffer Window::NewBuffer() {
  // At least one byte: a 0-element window still gets distinct buffers.
  return std::make_shared<PooledBuffer>(
      pool_.Acquire(static_cast<size_t>(std::max<int64_t>(bytes_, 1))));
}

WindowBuffer Window::ZeroBuffer() {
  WindowBuffer buffer = NewBuffer();
  if (bytes_ > 0) std::memset(buffer->data(), 0, static_cast<size_t>(bytes_));
  return buffer;
}

void Window::Replace(int from, WindowBuffer data, bool count_version, std::optional<double> p) {
  const int slot = SlotIndex(from);
  if (slot < 0) return;  // checked by the caller; never a slot of another window
  WindowBuffer old;      // let go of outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  old = std::move(data_[slot]);
  data_[slot] = std::move(data);
  if (count_version) ++versions_[slot];
  if (p) p_[slot] = *p;
}

Status Window::Accumulate(int from, const void* data, std::optional<double> p) {
  const int slot = SlotIndex(from);
  if (slot < 0) return Status::Internal("accumulate from a rank without a slot");
  std::lock_guard<std::mutex> lock(mutex_);
  WindowBuffer& current = data_[slot];
  if (current.use_count() > 1) {  // a reader holds it: the sum goes to a buffer of its own
    WindowBuffer sum = NewBuffer();
    if (bytes_ > 0) std::memcpy(sum->data(), current->data(), static_cast<size_t>(bytes_));
    current = std::move(sum);
  }
  if (p) p_[slot] += *p;
  return ReduceInto(current->data(), data, count_, dtype(), ReduceOp::kSum);
}

Window::Snapshot Window::Read(const std::vector<int>& from, bool reset) {
  Snapshot snapshot;
  std::vector<WindowBuffer> zeros;
  if (reset) {  // made before taking the lock
    for (size_t i = 0; i < from.size(); ++i) zeros.push_back(ZeroBuffer());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < from.size(); ++i) {
    const int slot = SlotIndex(from[i]);
    if (slot < 0) continue;  // checked by the caller
    snapshot.p.push_back(p_[slot]);
    if (reset) {
      snapshot.data.push_back(std::move(data_[slot]));
      data_[slot] = std::move(zeros[i]);
      p_[slot] = 0.0;
    } else {
      snapshot.data.push_back(data_[slot]);
    }
  }
  std::fill(versions_.begin(), versions_.end(), 0);
  return snapshot;
}

std::map<int, int64_t> Window::Versions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<int, int64_t> versions;
  for (size_t i = 0; i < spec_.in_neighbors.size(); ++i)
    versions[spec_.in_neighbors[i]] = versions_[i];
  return versions;
}

double Window::p_self() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return p_self_;
}

void Window::set_p_self(double p) {
  std::lock_guard<std::mutex> lock(mutex_);
  p_self_ = p;
}

void Window::NoteLateError(const Status& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (late_error_.ok()) late_error_ = error;
}

Status Window::TakeLateError() {
  std::lock_guard<std::mutex> lock(mutex_);
  Status error = late_error_;
  late_error_ = Status::OK();
  return error;
}

}  // namespace flock
