// StagedTransport (FLOCK_GPU_VIA_MPI=1): device data over the host transport
// (MPI), for clusters where NCCL cannot be used. Each call copies its device
// input into pinned host memory on the backend's stream, waits for the stream
// (MPI needs the bytes on the host now: the one place the GPU path blocks the
// host), communicates, and queues the copy back. The pinned buffers are reused:
// the next call's wait for the stream also covers the previous copy back.
// Debian's OpenMPI is not CUDA-aware, so device pointers never go to MPI.
#pragma once

#include <cuda_runtime_api.h>

#include "flock/transport/cuda/device_transport.h"

namespace flock {

class StagedTransport : public DeviceTransport {
 public:
  StagedTransport(Transport& host, cudaStream_t stream);
  ~StagedTransport() override;

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
  int64_t max_alltoall_bytes() const override { return host_.max_alltoall_bytes(); }

  // Outside a group, a Send or Recv is a group of one.
  Status Send(const void* buffer, int64_t bytes, int dest, int tag, CommGroup group) override;
  Status Recv(void* buffer, int64_t bytes, int source, int tag, CommGroup group) override;
  Status GroupStart() override;
  Status GroupEnd() override;

  Status CheckAsyncErrors() override { return Status::OK(); }
  Status Shutdown() override;
  int64_t staged_bytes() const override { return staged_bytes_; }

 private:
  struct Transfer {
    bool send;
    void* device;
    int64_t bytes;
    int peer;
    CommGroup group;
  };
  // Pinned host memory of at least `bytes` (slot 0: inputs, 1: outputs).
  Result<char*> Pinned(int slot, int64_t bytes);
  Status ToHost(void* host, const void* device, int64_t bytes);
  Status ToDevice(void* device, const void* host, int64_t bytes);
  Status WaitForStream();
  Status RunGroup(const std::vector<Transfer>& group);

  cudaStream_t stream_;
  char* pinned_[2] = {nullptr, nullptr};
  int64_t pinned_bytes_[2] = {0, 0};
  int group_depth_ = 0;
  std::vector<Transfer> group_;
  int64_t staged_bytes_ = 0;
};

}  // namespace flock
