// Timeline: a Chrome trace-event file (chrome://tracing, Perfetto) per rank.
//
// Each tensor name gets its own row (a "thread" named after the tensor). An
// op appears as a span named after the op kind, and inside it one span per
// phase: QUEUED (submitted, not yet seen by the engine), NEGOTIATING (waiting
// for every rank), MEMCPY_IN_FUSION_BUFFER, COMMUNICATE, MEMCPY_OUT_FUSION_BUFFER.
// User activities (timeline_start_activity) nest the same way. Writes are
// serialized by a mutex; the file is a valid JSON array once closed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "flock/common/status.h"

namespace flock {

class Timeline {
 public:
  Timeline() = default;
  ~Timeline() { Stop(); }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // The file rank `rank` writes for `path`: "{rank}" in path is replaced by
  // the rank; otherwise ".rank<r>" goes before the extension (t.json -> t.rank0.json).
  static std::string RankPath(const std::string& path, int rank);

  Status Start(const std::string& path, int rank);
  void Stop();
  bool active() const { return active_.load(std::memory_order_acquire); }

  using TimePoint = std::chrono::steady_clock::time_point;
  // Opens / closes a span on the row of `row` (a tensor name). `at` defaults to now.
  // Without a file they return at once, unlocked: every op calls them several times.
  void Begin(const std::string& row, std::string_view span, TimePoint at = TimePoint()) {
    if (active()) Record(row, &span, at);
  }
  void End(const std::string& row, TimePoint at = TimePoint()) {
    if (active()) Record(row, nullptr, at);
  }

 private:
  void Record(const std::string& row, const std::string_view* span, TimePoint at);  // span or end
  int RowId(const std::string& row);     // requires mutex_
  void Write(const std::string& event);  // requires mutex_
  double Micros(TimePoint at) const;

  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::atomic<bool> active_{false};  // file_ is open (read without the lock)
  bool first_event_ = true;
  int rank_ = 0;
  TimePoint origin_;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace flock
