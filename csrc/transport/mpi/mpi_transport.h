// MpiTransport: the Transport over OpenMPI.
//
// Initializes MPI with MPI_THREAD_MULTIPLE unless someone (mpi4py, a host
// program) already did, and then leaves finalization to them. Keeps three
// private communicators (duplicates, so user MPI traffic never collides):
// world, control, neighbor, local (one machine: the MPI shared-memory group, or blocks of
// `local_size_override` ranks for tests) and cross (same local rank on every
// machine). Errors on these communicators are returned, never fatal.
#pragma once

#include <mpi.h>

#include <climits>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "flock/transport/mpi/idle_yield_switch.h"
#include "flock/transport/mpi/mpi_types.h"
#include "flock/transport/transport.h"

namespace flock {

class MpiTransport final : public Transport {
 public:
  // local_size_override > 0 fakes machines of that many consecutive ranks.
  // local_size_override > 0 groups consecutive ranks into machines of that size
  // (emulated machines); `variable` names the setting it came from, for errors.
  static Result<std::unique_ptr<MpiTransport>> Create(int local_size_override,
                                                      const std::string& variable);
  ~MpiTransport() override;

  int rank(CommGroup group) const override;
  int size(CommGroup group) const override;

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
  int64_t max_alltoall_bytes() const override { return INT_MAX; }
  Status Barrier(CommGroup group) override;
  Status Send(const void* buffer, int64_t bytes, int dest, int tag, CommGroup group) override;
  Status Recv(void* buffer, int64_t bytes, int source, int tag, CommGroup group) override;
  Status PostSend(std::vector<char> bytes, int dest, int tag, CommGroup group) override;
  Result<bool> TryReceive(int source, int tag, CommGroup group, int* from,
                          std::vector<char>* bytes) override;
  Result<bool> ProgressSends() override;
  Result<TransferId> StartSend(const void* buffer, int64_t bytes, int dest, int tag,
                               CommGroup group) override;
  Result<TransferId> StartRecv(void* buffer, int64_t bytes, int source, int tag,
                               CommGroup group) override;
  Result<bool> TestTransfer(TransferId id) override;
  // OpenMPI's yield-when-idle is off during a pass (see idle_yield_switch.h).
  void BeginPollingPass() override { idle_yield_->BeginPolling(); }
  void EndPollingPass() override { idle_yield_->EndPolling(); }
  bool shares_cores() const override { return idle_yield_->active(); }
  void Abort(int code) override;
  bool threads_supported() const override { return thread_level_ == MPI_THREAD_MULTIPLE; }
  bool unified_window_model() const override { return unified_window_model_; }
  bool on_this_host(int rank) const override;

  // Finalizes MPI at process exit if flock was the one to initialize it.
  static void FinalizeIfOwned();

 private:
  MpiTransport() = default;
  Status Init(int local_size_override, const std::string& variable);
  Status FindHostPeers(MPI_Comm world);
  void FindWindowModel();
  MPI_Comm comm(CommGroup group) const;

  struct PostedSend {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<char> bytes;
  };

  MPI_Comm comms_[kNumCommGroups] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL,
                                     MPI_COMM_NULL};
  int ranks_[kNumCommGroups] = {0, 0, 0, 0, 0};
  int sizes_[kNumCommGroups] = {1, 1, 1, 1, 1};
  std::list<PostedSend> posted_sends_;
  // A transfer over 2 GiB travels as several messages, hence several requests.
  std::unordered_map<TransferId, std::vector<MPI_Request>> transfers_;
  TransferId next_transfer_ = 1;  // a list: MPI holds pointers into each buffer
  int thread_level_ = MPI_THREAD_SINGLE;
  bool unified_window_model_ = false;
  std::vector<bool> on_this_host_;  // by world rank
  MpiTypes types_;
  std::unique_ptr<IdleYieldSwitch> idle_yield_ = std::make_unique<IdleYieldSwitch>();
};

}  // namespace flock
