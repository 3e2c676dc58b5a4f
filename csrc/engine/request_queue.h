// RequestQueue: where user threads hand requests to the engine's loop — the
// only engine state the two share, under one mutex. User threads Push
// requests and ask for a flush (a thread waits) or a stop; the loop Drains
// everything at once, without taking the lock when nothing is new (`signaled`
// is read lock-free), and Releases a name when its request is done, so that a
// name is in flight at most once per rank.
//
// gathering: the engine sleeps through a fusion window, and an op submitted
// meanwhile joins it without waking the engine. The flag and the signal form
// a Dekker pair (both sequentially consistent): a submitter that still sees
// `gathering` set must not race with an engine that cleared it and then
// missed the submitter's signal.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "flock/common/status.h"
#include "flock/requests/pending_request.h"

namespace flock {

class RequestQueue {
 public:
  // What one Drain took. `requests` is the queue's own buffer (its capacity is
  // kept for the next burst): the loop moves the requests out and clears it.
  struct Intake {
    std::vector<PendingRequest>& requests;
    bool stop = false;   // Shutdown was asked
    bool flush = false;  // a thread waits (or stops): announce without waiting for more
  };

  // User threads. Queues a request made by `make(request)` — it fills in the
  // handle and the rest — unless refused: its name is in flight on this rank,
  // or the engine no longer accepts requests. `make` runs only when accepted.
  template <typename Make>
  Status Push(const std::string& name, const char* kind, Make&& make);
  void RequestFlush();
  void RequestStop();
  bool signaled(std::memory_order order = std::memory_order_seq_cst) const {
    return signal_.load(order);
  }
  bool gathering() const { return gathering_.load(std::memory_order_seq_cst); }

  // The loop.
  Intake Drain();
  void SetGathering(bool on) { gathering_.store(on, std::memory_order_seq_cst); }
  void Release(const std::string& name);
  template <typename Requests>
  void ReleaseAll(const Requests& requests);  // pointers to PendingRequest
  void StopAccepting(std::string why);

 private:
  std::mutex mutex_;
  std::vector<PendingRequest> queue_;
  std::vector<PendingRequest> drained_;  // swapped with queue_ (see Intake)
  std::unordered_set<std::string> names_in_flight_;
  bool stop_requested_ = false;
  bool flush_requested_ = false;
  bool accepting_ = true;
  std::string refusal_;  // why Push refuses once the engine stopped accepting
  // Set (under mutex_) whenever queue_, stop_requested_ or flush_requested_
  // change, so the loop looks at them without taking the lock.
  std::atomic<bool> signal_{false};
  std::atomic<bool> gathering_{false};
};

template <typename Make>
Status RequestQueue::Push(const std::string& name, const char* kind, Make&& make) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!accepting_) return Status::Aborted(refusal_);
  if (!names_in_flight_.insert(name).second) {
    return Status::InvalidArgument(std::string(kind) + " '" + name +
                                   "': a request with this name is still in flight on this "
                                   "rank; synchronize it first or use another name");
  }
  queue_.emplace_back();
  make(queue_.back());
  signal_.store(true, std::memory_order_seq_cst);  // see gathering_
  return Status::OK();
}

template <typename Requests>
void RequestQueue::ReleaseAll(const Requests& requests) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const PendingRequest* r : requests) names_in_flight_.erase(r->op.name);
}

}  // namespace flock
