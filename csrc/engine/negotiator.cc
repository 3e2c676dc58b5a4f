#include "flock/engine/negotiator.h"

#include <algorithm>
#include <utility>

namespace flock {

Negotiator::Negotiator(double cycle_time_ms)
    : cycle_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(cycle_time_ms))) {}

void Negotiator::Add(PendingRequest request) {
  const std::string& name = request.op.name;
  ReadyEntry entry{name, kNotCached, MakeSignature(request.op), request.neighbor_call};
  if (request.op.auto_named)
    entry.cache_id = kDoNotCache;
  else if (!Dim0Free(request.op.kind))  // its first dims differ from call to call
    entry.cache_id = cache_.Lookup(name, entry.signature);
  // Submission times: a request that joined a window while the engine slept
  // extends it from when it came, not from when the engine woke.
  if (unsent_.empty()) first_unsent_ = request.submitted;
  last_unsent_ = std::max(last_unsent_, request.submitted);
  unsent_.push_back(std::move(entry));
  std::string key = name;
  pending_.emplace(std::move(key), std::move(request));
}

Negotiator::Clock::time_point Negotiator::announce_deadline() const {
  return std::min(last_unsent_ + cycle_, first_unsent_ + 10 * cycle_);
}

bool Negotiator::AnnounceDue(bool flush, Clock::time_point now) const {
  return !unsent_.empty() && (flush || now >= announce_deadline());
}

std::vector<ReadyEntry> Negotiator::TakeAnnouncement() {
  std::vector<ReadyEntry> entries;
  entries.swap(unsent_);
  return entries;
}

void Negotiator::TakeWithdrawn(const std::string& match_name, int64_t call,
                               const std::function<void(PendingRequest&)>& finish) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    const PendingRequest& request = it->second;
    if (request.neighbor_call != call || NeighborMatchName(request.op) != match_name) continue;
    finish(it->second);
    // Still in the fusion window: it must not be announced.
    unsent_.erase(std::remove_if(unsent_.begin(), unsent_.end(),
                                 [&](const ReadyEntry& e) { return e.name == it->first; }),
                  unsent_.end());
    pending_.erase(it);
    return;
  }
}

PendingRequest* Negotiator::Find(const std::string& name) {
  auto it = pending_.find(name);
  return it == pending_.end() ? nullptr : &it->second;
}

void Negotiator::Erase(const std::string& name) {
  pending_.erase(name);
}

Status AnswerError(const PendingRequest& request, const Response& error) {
  const Status& local = request.op.local_status;
  if (local.ok()) return Status(error.code, error.error);
  return Status(local.code(), std::string(OpKindName(request.op.kind)) + " '" + request.op.name +
                                  "': " + local.message());
}

Negotiator::Clock::time_point Negotiator::oldest_submission(Clock::time_point now) const {
  Clock::time_point oldest = now;
  for (const auto& [name, request] : pending_) oldest = std::min(oldest, request.submitted);
  return oldest;
}

}  // namespace flock
