// NcclTransport: the Transport for device memory. Its collectives are NCCL's,
// queued on one CUDA stream (the backend's communication stream): a call
// returns once its work is queued, and later work on that stream sees the
// result (stream order, not the host transport's "done on return").
//
// Communicators are made per group at the group's first op, which every rank
// of the group reaches together (ops run in the coordinator's order): rank 0
// of the group makes the unique id, the host transport broadcasts it, all
// join, and a host barrier follows (NCCL's init may return before its peers
// have; Horovod's PR #26 and cuDecomp's notes on MPI_Bcast progress).
// Control messages and the matching of names stay on the host transport.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <string>

#include "flock/transport/cuda/device_transport.h"

namespace flock {

class NcclTransport : public DeviceTransport {
 public:
  // `host` carries the ids and barriers; `device` is the rank's CUDA device.
  NcclTransport(Transport& host, cudaStream_t stream, int device);
  ~NcclTransport() override;  // aborts communicators Shutdown did not finish

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

  // Point-to-point, in NCCL's form: Send/Recv queue one transfer each; between
  // GroupStart and GroupEnd they are posted together, so their order on the
  // two sides need not match (a neighbor exchange is one group).
  Status Send(const void* buffer, int64_t bytes, int dest, int tag, CommGroup group) override;
  Status Recv(void* buffer, int64_t bytes, int source, int tag, CommGroup group) override;
  Status GroupStart() override;
  Status GroupEnd() override;

  // The group's communicator, made now if it is not yet (outside any NCCL group).
  Status Prepare(CommGroup group) override { return Comm(group).status(); }
  // NCCL's asynchronous errors of every communicator made so far; on the first
  // one, every communicator is aborted (which releases their stream work) and
  // the error stays: later calls fail with it.
  Status CheckAsyncErrors() override;
  std::vector<CommGroup> communicators() const override;
  // Flushes and frees the communicators (call with the stream drained).
  Status Shutdown() override;

 private:
  Result<ncclComm_t> Comm(CommGroup group);
  Status MakeComm(CommGroup group, ncclComm_t* comm);
  Status Check(ncclResult_t result, const std::string& what);
  void AbortAll();

  cudaStream_t stream_;
  int device_;
  std::array<ncclComm_t, kNumCommGroups> comms_{};
  Status failed_;  // the sticky error after an asynchronous failure
};

}  // namespace flock
