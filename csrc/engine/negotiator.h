// Negotiator: a rank's side of agreeing on global ops with the coordinator
// (pure: no transport). A submitted global request waits in the fusion window
// until it is announced — one cycle after the latest arrival, at most ten
// after the first, or at once when a thread waits — and stays pending until
// rank 0's answer executes or fails it. Announcements name a cached signature
// by id when this rank has seen the name with the same signature before.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "flock/engine/response_cache.h"
#include "flock/engine/wire.h"
#include "flock/requests/pending_request.h"

namespace flock {

class Negotiator {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Negotiator(double cycle_time_ms);

  // A global request joins the fusion window.
  void Add(PendingRequest request);
  bool AnnounceDue(bool flush, Clock::time_point now) const;
  Clock::time_point announce_deadline() const;
  // The window's entries, to announce; their requests stay pending.
  std::vector<ReadyEntry> TakeAnnouncement();

  PendingRequest* Find(const std::string& name);
  void Erase(const std::string& name);
  // Hands every pending request to `finish` and forgets them (and the window).
  template <typename Finish>
  void TakeAll(Finish&& finish);
  // Rank 0's error answer: each request it names that this rank submitted is
  // handed to `finish` with its status (AnswerError) and forgotten. Names this
  // rank never submitted (a stall, a shutdown) are skipped.
  template <typename Finish>
  void TakeFailed(const Response& error, Finish&& finish);

  // Rank 0 withdrew call `call` of a negotiated neighbor op: this rank's request
  // for it, if pending, is handed to `finish` and forgotten (never announced).
  void TakeWithdrawn(const std::string& match_name, int64_t call,
                     const std::function<void(PendingRequest&)>& finish);

  bool empty() const { return pending_.empty(); }
  bool has_unsent() const { return !unsent_.empty(); }
  // Announced requests without an answer yet.
  bool awaiting_response() const { return pending_.size() > unsent_.size(); }
  Clock::time_point oldest_submission(Clock::time_point now) const;
  ResponseCache& cache() { return cache_; }

 private:
  const Clock::duration cycle_;
  std::unordered_map<std::string, PendingRequest> pending_;
  std::vector<ReadyEntry> unsent_;
  Clock::time_point first_unsent_, last_unsent_;
  ResponseCache cache_;  // what rank 0 assigned (it bounds the ids it hands out)
};

// A rank that rejected its own input reports its own reason; the others, rank 0's.
Status AnswerError(const PendingRequest& request, const Response& error);

template <typename Finish>
void Negotiator::TakeFailed(const Response& error, Finish&& finish) {
  for (const std::string& name : error.names) {
    auto it = pending_.find(name);
    if (it == pending_.end()) continue;
    finish(it->second, AnswerError(it->second, error));
    pending_.erase(it);
  }
}

template <typename Finish>
void Negotiator::TakeAll(Finish&& finish) {
  for (auto& [name, request] : pending_) finish(request);
  pending_.clear();
  unsent_.clear();
}

}  // namespace flock
