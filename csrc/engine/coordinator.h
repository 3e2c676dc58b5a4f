// Coordinator (pure state machine, run by rank 0's engine thread): collects
// which ranks have announced which names and decides, identically for every
// rank, what to execute and in which order.
//
// Vocabulary: an *announcement* is a ReadyEntry from one rank; a name is
// *complete* when every rank has announced it. A complete name whose
// signatures agree becomes a fusion candidate; one whose signatures disagree
// becomes an error response naming the field and the ranks. Shutdown: the
// first rank to shut down makes every pending and later name fail; when all
// ranks have shut down the coordinator emits the final response.
// The coordinator never touches tensors or the transport, so it is tested
// without MPI.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flock/common/status.h"
#include "flock/engine/response_cache.h"
#include "flock/engine/wire.h"

namespace flock {

using Clock = std::chrono::steady_clock;

// A name some ranks announced and others did not, for too long.
struct Stall {
  std::string name;
  int64_t call = -1;  // a negotiated neighbor op's call (ReadyEntry::call)
  double seconds = 0;
  std::vector<int> ready_ranks;
  std::vector<int> missing_ranks;
};

class Coordinator {
 public:
  Coordinator(int size, int64_t fusion_threshold_bytes,
              size_t cache_capacity = ResponseCache::kUnbounded);

  // Records rank's announcements; an unknown cache id is an error (a bug).
  Status AddReady(int rank, const std::vector<ReadyEntry>& entries, Clock::time_point now);
  // `stalled`: ranks `rank` saw stall past FLOCK_STALL_SHUTDOWN_S.
  void AddShutdown(int rank, const std::vector<int>& stalled = {},
                   Clock::time_point now = Clock::now());
  // A rank found that a negotiated neighbor op's call cannot run (a peer runs
  // it on the host path). Every rank fails that call (a kWithdrawn response),
  // and its announcements — pending, or still on their way — are dropped.
  void Withdraw(const Withdrawal& withdrawal);
  // The control plane cannot be trusted any more (a message that cannot be
  // read, a rank that reports one): every pending name fails with `reason` on
  // every rank, and so does every name announced later. Shutdown still works.
  void Break(const std::string& reason);

  // The responses decided since the last call, in execution order.
  std::vector<Response> TakeResponses();

  // Names pending longer than `seconds`.
  std::vector<Stall> FindStalls(Clock::time_point now, double seconds) const;
  // Fails the given stalled names on every rank with `reason`.
  void FailStalled(const std::vector<Stall>& stalls, const std::string& reason);

  // Ranks seen stalling (by any rank, or in FailStalled) that have not shut
  // down although every other rank has, for at least `seconds`: the shutdown
  // cannot complete without them, and they may never come. Else empty.
  std::vector<int> OverdueStalledRanks(Clock::time_point now, double seconds) const;

  size_t pending_names() const { return pending_.size(); }
  bool finished() const { return final_sent_; }

 private:
  struct Pending {
    std::vector<std::optional<OpSignature>> signatures;  // per rank
    int count = 0;
    bool cacheable = true;  // no rank auto-named it
    Clock::time_point first_seen;
  };

  // A name every rank announced with matching signatures.
  struct Agreed {
    std::string name;
    OpSignature signature;
    std::vector<int64_t> first_dims;  // allgather: every rank's dim 0
    bool cacheable = true;
  };

  void Announce(int rank, const ReadyEntry& entry, const OpSignature& signature,
                Clock::time_point now);
  bool Withdrawn(const ReadyEntry& entry) const;
  void Complete(const std::string& name, Pending pending);
  void FailEverythingPending(const std::string& reason);
  void StopCollectives(const std::string& reason);

  int size_;
  int64_t threshold_;
  ResponseCache cache_;
  // By name and call: a negotiated neighbor op completes only when every rank
  // announced the same call of it (ranks may be a call apart after a call
  // that ran on the host path on some of them; see Withdraw).
  using PendingKey = std::pair<std::string, int64_t>;
  std::map<PendingKey, Pending> pending_;
  std::map<std::string, int64_t> withdrawn_;  // by name: the latest call withdrawn
  std::vector<Agreed> completed_;             // agreed, awaiting a fusion plan
  std::vector<Response> errors_;
  std::vector<bool> shut_down_;
  std::vector<Clock::time_point> shut_down_at_;
  std::vector<bool> stalled_;  // seen stalling by some rank
  int shut_down_count_ = 0;
  std::string stopped_reason_;  // why collectives stopped (a shutdown, a Break)
  bool final_sent_ = false;
  bool final_due_ = false;
};

}  // namespace flock
