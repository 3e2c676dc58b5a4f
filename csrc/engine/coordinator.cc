#include "flock/engine/coordinator.h"

#include <algorithm>

#include "flock/engine/fusion_planner.h"

namespace flock {

Coordinator::Coordinator(int size, int64_t fusion_threshold_bytes, size_t cache_capacity)
    : size_(size),
      threshold_(fusion_threshold_bytes),
      cache_(cache_capacity),
      shut_down_(static_cast<size_t>(size)),
      shut_down_at_(static_cast<size_t>(size)),
      stalled_(static_cast<size_t>(size)) {}

Status Coordinator::AddReady(int rank, const std::vector<ReadyEntry>& entries,
                             Clock::time_point now) {
  for (const ReadyEntry& entry : entries) {
    const OpSignature* signature = &entry.signature;
    if (entry.cache_id >= 0) {
      signature = cache_.Find(entry.cache_id);
      if (signature == nullptr) {
        return Status::Internal("rank " + std::to_string(rank) + " named unknown cache id " +
                                std::to_string(entry.cache_id) + " for '" + entry.name + "'");
      }
    }
    if (!stopped_reason_.empty()) {
      Response failed =
          MakeResponse(ResponseType::kError, static_cast<OpKind>(signature->kind), {entry.name});
      failed.error = stopped_reason_;
      failed.code = StatusCode::kAborted;
      errors_.push_back(std::move(failed));
      continue;
    }
    if (Withdrawn(entry)) continue;  // its rank failed it already (the kWithdrawn response)
    Announce(rank, entry, *signature, now);
  }
  return Status::OK();
}

bool Coordinator::Withdrawn(const ReadyEntry& entry) const {
  if (entry.call < 0) return false;
  auto it = withdrawn_.find(entry.name);
  return it != withdrawn_.end() && entry.call <= it->second;
}

void Coordinator::Announce(int rank, const ReadyEntry& entry, const OpSignature& signature,
                           Clock::time_point now) {
  const std::string& name = entry.name;
  auto [it, inserted] = pending_.try_emplace({name, entry.call});
  Pending& p = it->second;
  if (inserted) {
    p.signatures.resize(static_cast<size_t>(size_));
    p.first_seen = now;
  }
  if (!p.signatures[static_cast<size_t>(rank)]) ++p.count;
  p.cacheable = p.cacheable && entry.cache_id != kDoNotCache;
  p.signatures[static_cast<size_t>(rank)] = signature;
  if (p.count < size_) return;
  Pending done = std::move(p);
  pending_.erase(it);
  Complete(name, std::move(done));
}

void Coordinator::Complete(const std::string& name, Pending pending) {
  std::vector<OpSignature> all;
  for (auto& s : pending.signatures) all.push_back(*s);
  const auto kind = static_cast<OpKind>(all.front().kind);
  Status agreed = CompareSignatures(kind, name, all, ReferenceRank(all));
  if (!agreed.ok()) {
    Response failed = MakeResponse(ResponseType::kError, kind, {name});
    failed.error = agreed.message();
    failed.code = agreed.code();
    errors_.push_back(std::move(failed));
    return;
  }
  std::vector<int64_t> first_dims;
  if (kind == OpKind::kAllgather) {
    for (const OpSignature& s : all) first_dims.push_back(s.dims[0]);
  }
  completed_.push_back({name, all.front(), std::move(first_dims), pending.cacheable});
}

std::vector<Response> Coordinator::TakeResponses() {
  // Executions first: a shutdown notice decided in the same round must not
  // fail names every rank has already agreed to run.
  std::vector<Response> out;
  std::vector<FusionCandidate> candidates;
  for (const Agreed& a : completed_) candidates.push_back(CandidateFrom(a.signature, size_));
  for (const std::vector<size_t>& batch : PlanFusion(candidates, threshold_)) {
    Response execute = MakeResponse(ResponseType::kExecute,
                                    static_cast<OpKind>(completed_[batch.front()].signature.kind));
    for (size_t i : batch) {
      const Agreed& agreed = completed_[i];
      execute.names.push_back(agreed.name);
      // Gather signatures differ in dim 0 between ranks, so they are never cached.
      const bool cacheable = agreed.cacheable && !Dim0Free(execute.kind);
      execute.cache_ids.push_back(cacheable ? cache_.Assign(agreed.name, agreed.signature) : -1);
      const auto& dims = agreed.first_dims;
      execute.first_dims.insert(execute.first_dims.end(), dims.begin(), dims.end());
    }
    out.push_back(std::move(execute));
  }
  completed_.clear();
  for (Response& error : errors_) out.push_back(std::move(error));
  errors_.clear();
  if (final_due_ && !final_sent_) {
    out.push_back(MakeResponse(ResponseType::kFinal));
    final_sent_ = true;
  }
  return out;
}

void Coordinator::AddShutdown(int rank, const std::vector<int>& stalled, Clock::time_point now) {
  for (int r : stalled) stalled_[static_cast<size_t>(r)] = true;
  if (shut_down_[static_cast<size_t>(rank)]) return;
  shut_down_[static_cast<size_t>(rank)] = true;
  shut_down_at_[static_cast<size_t>(rank)] = now;
  if (shut_down_count_++ == 0) {
    StopCollectives("flock was shut down on rank " + std::to_string(rank) +
                    "; collective ops can no longer complete");
  }
  if (shut_down_count_ == size_) final_due_ = true;
}

void Coordinator::Withdraw(const Withdrawal& withdrawal) {
  if (!stopped_reason_.empty()) return;  // every pending name has failed already
  auto [latest, first] = withdrawn_.try_emplace(withdrawal.name, withdrawal.call);
  if (!first) {
    if (latest->second >= withdrawal.call) return;  // another rank reported it first
    latest->second = withdrawal.call;
  }
  // A rank past the withdrawn call (its part of it ran on the host path) may
  // have announced its next one already: that one stays.
  pending_.erase({withdrawal.name, withdrawal.call});
  Response failed =
      MakeResponse(ResponseType::kWithdrawn, withdrawal.kind, {withdrawal.match_name});
  failed.call = withdrawal.call;
  failed.error = withdrawal.reason;
  failed.code = StatusCode::kMismatch;
  errors_.push_back(std::move(failed));
}

void Coordinator::Break(const std::string& reason) {
  StopCollectives(reason);
}

void Coordinator::StopCollectives(const std::string& reason) {
  if (!stopped_reason_.empty()) return;  // the first reason is the one every rank sees
  stopped_reason_ = reason;
  Response notice = MakeResponse(ResponseType::kShuttingDown);
  notice.error = reason;
  errors_.push_back(std::move(notice));
  FailEverythingPending(reason);
}

void Coordinator::FailEverythingPending(const std::string& reason) {
  for (auto& [key, p] : pending_) {
    Response failed = MakeResponse(ResponseType::kError, OpKind::kAllreduce, {key.first});
    for (auto& s : p.signatures) {
      if (s) failed.kind = static_cast<OpKind>(s->kind);
    }
    failed.error = reason;
    failed.code = StatusCode::kAborted;
    errors_.push_back(std::move(failed));
  }
  pending_.clear();
}

std::vector<Stall> Coordinator::FindStalls(Clock::time_point now, double seconds) const {
  std::vector<Stall> stalls;
  for (const auto& [key, p] : pending_) {
    const double age = std::chrono::duration<double>(now - p.first_seen).count();
    if (age < seconds) continue;
    Stall stall;
    stall.name = key.first;
    stall.call = key.second;
    stall.seconds = age;
    for (int r = 0; r < size_; ++r) {
      (p.signatures[static_cast<size_t>(r)] ? stall.ready_ranks : stall.missing_ranks).push_back(r);
    }
    stalls.push_back(std::move(stall));
  }
  return stalls;
}

void Coordinator::FailStalled(const std::vector<Stall>& stalls, const std::string& reason) {
  for (const Stall& stall : stalls) {
    for (int r : stall.missing_ranks) stalled_[static_cast<size_t>(r)] = true;
    auto it = pending_.find({stall.name, stall.call});
    if (it == pending_.end()) continue;
    Response failed = MakeResponse(ResponseType::kError, OpKind::kAllreduce, {stall.name});
    for (auto& s : it->second.signatures) {
      if (s) failed.kind = static_cast<OpKind>(s->kind);
    }
    failed.error = reason;
    failed.code = StatusCode::kAborted;
    errors_.push_back(std::move(failed));
    pending_.erase(it);
  }
}

std::vector<int> Coordinator::OverdueStalledRanks(Clock::time_point now, double seconds) const {
  std::vector<int> overdue;
  Clock::time_point others_done{};
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<size_t>(r);
    if (shut_down_[i])
      others_done = std::max(others_done, shut_down_at_[i]);
    else if (stalled_[i])
      overdue.push_back(r);
    else
      return {};  // a rank that never stalled may still come: wait for it
  }
  if (overdue.empty() || std::chrono::duration<double>(now - others_done).count() < seconds)
    return {};
  return overdue;
}

}  // namespace flock
