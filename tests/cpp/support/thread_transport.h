// ThreadTransport (tests only): N threads of one process play N ranks.
//
// Control messages go through per-rank mailboxes; collectives meet at a
// rendezvous where every rank deposits its buffer, then each computes its own
// result from all deposits. Everything is one machine (local = world). This
// lets the engine run with several ranks without MPI, and under
// ThreadSanitizer.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "flock/transport/transport.h"

namespace flock::testing {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size);
  int size() const { return size_; }
  // Pretend ranks r and s run on the same host when r / n == s / n (0: one host).
  void set_ranks_per_host(int n) { ranks_per_host_ = n; }
  int ranks_per_host() const { return ranks_per_host_; }

  // Every rank calls it; returns when all have (reusable).
  void Barrier();

  struct Message {
    int from;
    int tag;
    std::vector<char> bytes;
  };
  void Post(int dest, Message message);
  bool Take(int rank, int source, int tag, Message* out);

  // Rendezvous storage: rank r's deposit for the current collective.
  std::vector<std::vector<char>>& deposits() { return deposits_; }

 private:
  int size_;
  int ranks_per_host_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  long generation_ = 0;
  std::vector<std::deque<Message>> mailboxes_;
  std::vector<std::vector<char>> deposits_;
};

class ThreadTransport final : public Transport {
 public:
  ThreadTransport(ThreadWorld& world, int rank) : world_(world), rank_(rank) {}

  int rank(CommGroup group) const override { return group == CommGroup::kCross ? 0 : rank_; }
  int size(CommGroup group) const override {
    return group == CommGroup::kCross ? 1 : world_.size();
  }

  Status Allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                   CommGroup group) override;
  Status Broadcast(void* buffer, int64_t bytes, int root, CommGroup group) override;
  Status Allgather(const void* send, int64_t bytes, void* recv, CommGroup group) override;
  Status Allgatherv(const void* send, const std::vector<int64_t>& recv_bytes, void* recv,
                    CommGroup group) override;
  Status ReduceScatter(const void* send, void* recv, int64_t count_per_rank, DataType dtype,
                       ReduceOp op, CommGroup group) override;
  Status Alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes, CommGroup group) override;
  Status Barrier(CommGroup group) override;
  Status Send(const void*, int64_t, int, int, CommGroup) override;
  Status Recv(void*, int64_t, int, int, CommGroup) override;
  Status PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) override;
  Result<bool> TryReceive(int source, int tag, CommGroup group, int* from,
                          std::vector<char>* bytes) override;
  Result<bool> ProgressSends() override { return true; }
  // Sends are eager copies (done at once); a receive completes when its
  // message is there.
  Result<TransferId> StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                               CommGroup group) override;
  Result<TransferId> StartRecv(void* buffer, int64_t bytes, int source, int tag,
                               CommGroup group) override;
  Result<bool> TestTransfer(TransferId id) override;
  void Abort(int code) override;
  bool threads_supported() const override { return true; }
  bool on_this_host(int rank) const override {
    const int n = world_.ranks_per_host();
    return n <= 0 || rank < 0 || rank / n == rank_ / n;
  }

 private:
  struct PendingRecv {
    void* buffer;
    int64_t bytes;
    int source;
    int tag;
  };
  void Deposit(const void* data, int64_t bytes);

  ThreadWorld& world_;
  int rank_;
  std::unordered_map<TransferId, PendingRecv> recvs_;
  TransferId next_transfer_ = 1;
};

}  // namespace flock::testing
