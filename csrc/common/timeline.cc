#include "flock/common/timeline.h"

#include <cerrno>
#include <cstring>

namespace flock {
namespace {

std::string JsonEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // names never need control characters
    out += c;
  }
  return out;
}

}  // namespace

std::string Timeline::RankPath(const std::string& path, int rank) {
  const std::string r = std::to_string(rank);
  const auto placeholder = path.find("{rank}");
  if (placeholder != std::string::npos)
    return path.substr(0, placeholder) + r + path.substr(placeholder + 6);
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + ".rank" + r;
  return path.substr(0, dot) + ".rank" + r + path.substr(dot);
}

Status Timeline::Start(const std::string& path, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr) return Status::InvalidArgument("a timeline is already being recorded");
  const std::string file = RankPath(path, rank);
  file_ = std::fopen(file.c_str(), "w");
  if (file_ == nullptr) {
    return Status::InvalidArgument("cannot write the timeline to " + file + ": " +
                                   std::strerror(errno));
  }
  rank_ = rank;
  origin_ = std::chrono::steady_clock::now();
  first_event_ = true;
  rows_.clear();
  std::fputs("[\n", file_);
  Write("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(rank) +
        ",\"args\":{\"name\":\"rank " + std::to_string(rank) + "\"}}");
  active_.store(true, std::memory_order_release);
  return Status::OK();
}

void Timeline::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr) return;
  active_.store(false, std::memory_order_release);
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

double Timeline::Micros(TimePoint at) const {
  if (at == TimePoint()) at = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(at - origin_).count();
}

int Timeline::RowId(const std::string& row) {
  auto it = rows_.find(row);
  if (it != rows_.end()) return it->second;
  const int id = static_cast<int>(rows_.size()) + 1;
  rows_.emplace(row, id);
  Write("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(rank_) +
        ",\"tid\":" + std::to_string(id) + ",\"args\":{\"name\":\"" + JsonEscape(row) + "\"}}");
  return id;
}

void Timeline::Write(const std::string& event) {
  if (!first_event_) std::fputs(",\n", file_);
  first_event_ = false;
  std::fputs(event.c_str(), file_);
}

void Timeline::Record(const std::string& row, const std::string_view* span, TimePoint at) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr) return;  // stopped since active() was read
  const int tid = RowId(row);
  char ts[32];
  std::snprintf(ts, sizeof(ts), "%.3f", Micros(at));
  const std::string where = std::string(",\"ts\":") + ts + ",\"pid\":" + std::to_string(rank_) +
                            ",\"tid\":" + std::to_string(tid) + "}";
  if (span != nullptr) {
    Write("{\"name\":\"" + JsonEscape(*span) + "\",\"ph\":\"B\"" + where);
  } else {
    Write("{\"ph\":\"E\"" + where);
  }
}

}  // namespace flock
