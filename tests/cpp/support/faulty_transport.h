// FaultyTransport (tests only): a ThreadTransport that misbehaves on request.
//
// Each rule names messages posted with PostSend (group, destination, tag; -1:
// any) and what happens to the `nth` matching one (0: the first): it is
// dropped, corrupted (its bytes garbled), delayed, or its send fails. Abort
// records the call instead of ending the process, so a test can check that the
// engine ended the job. Everything else is the ThreadTransport underneath.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "thread_transport.h"

namespace flock::testing {

enum class Fault { kDrop, kCorrupt, kDelay, kFailSend };

struct FaultRule {
  Fault fault;
  CommGroup group;
  int dest = -1;
  int tag = -1;
  int nth = 0;  // which matching message (0: the first)
  std::chrono::milliseconds delay{50};
};

class FaultyTransport final : public Transport {
 public:
  FaultyTransport(ThreadWorld& world, int rank, std::vector<FaultRule> rules)
      : inner_(world, rank), rules_(std::move(rules)), seen_(rules_.size(), 0) {}

  int rank(CommGroup group) const override { return inner_.rank(group); }
  int size(CommGroup group) const override { return inner_.size(group); }
  Status Allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                   CommGroup group) override {
    return inner_.Allreduce(send, recv, count, dtype, op, group);
  }
  Status Broadcast(void* buffer, int64_t bytes, int root, CommGroup group) override {
    return inner_.Broadcast(buffer, bytes, root, group);
  }
  Status Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) override {
    return inner_.Allgather(send, bytes, recv, group);
  }
  Status Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes, void* recv,
                    CommGroup group) override {
    return inner_.Allgatherv(send, recv_bytes, recv, group);
  }
  Status ReduceScatter(const void* send, void* recv, int64_t count_per_rank, DataType dtype,
                       ReduceOp op, CommGroup group) override {
    return inner_.ReduceScatter(send, recv, count_per_rank, dtype, op, group);
  }
  Status Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes, CommGroup group) override {
    return inner_.Alltoallv(send, send_bytes, recv, recv_bytes, group);
  }
  int64_t max_alltoall_bytes() const override { return inner_.max_alltoall_bytes(); }
  Status Barrier(CommGroup group) override { return inner_.Barrier(group); }
  Status Send(const void* b, int64_t n, int dest, int tag, CommGroup group) override {
    return inner_.Send(b, n, dest, tag, group);
  }
  Status Recv(void* b, int64_t n, int source, int tag, CommGroup group) override {
    return inner_.Recv(b, n, source, tag, group);
  }
  Status PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) override;
  Result<bool> TryReceive(int source, int tag, CommGroup group, int* from,
                          std::vector<char>* bytes) override {
    return inner_.TryReceive(source, tag, group, from, bytes);
  }
  Result<bool> ProgressSends() override;
  Result<TransferId> StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                               CommGroup group) override {
    return inner_.StartSend(buffer, bytes, dest, tag, group);
  }
  Result<TransferId> StartRecv(void* buffer, int64_t bytes, int source, int tag,
                               CommGroup group) override {
    return inner_.StartRecv(buffer, bytes, source, tag, group);
  }
  Result<bool> TestTransfer(TransferId id) override { return inner_.TestTransfer(id); }
  void Abort(int) override { aborted_ = true; }
  bool threads_supported() const override { return true; }

  bool aborted() const { return aborted_; }

 private:
  struct Delayed {
    std::chrono::steady_clock::time_point due;
    std::vector<char> bytes;
    int dest;
    int tag;
    CommGroup group;
  };
  // The rule that applies to this message, if any (counts the matches).
  const FaultRule* Match(int dest, int tag, CommGroup group);

  ThreadTransport inner_;
  std::vector<FaultRule> rules_;
  std::vector<int> seen_;  // matching messages so far, per rule
  std::vector<Delayed> delayed_;
  std::mutex mutex_;  // PostSend / ProgressSends may come from a driving caller too
  std::atomic<bool> aborted_{false};
};

}  // namespace flock::testing
