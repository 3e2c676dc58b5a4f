// CudaBackend: the GpuBackend of an NCCL build — the rank's device, its
// communication stream (non-blocking: it never waits for the legacy default
// stream behind the caller's back), the events that order it with the
// callers' streams, a reused device fusion buffer and the NCCL transport.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <mutex>

#include "flock/transport/cuda/device_transport.h"
#include "flock/transport/gpu_backend.h"

namespace flock {

class CudaEvent : public GpuEvent {
 public:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  ~CudaEvent() override;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_;
};

class CudaBackend : public GpuBackend {
 public:
  // `configured_device` < 0: host_local_rank % the number of devices.
  // `via_mpi`: device data over the host transport (StagedTransport), not NCCL.
  // The device fusion buffer (`fusion_bytes`, FLOCK_FUSION_THRESHOLD) is
  // allocated here: a fused batch never allocates, so it cannot fail on one
  // rank alone while the others wait for it in NCCL.
  static Result<std::unique_ptr<GpuBackend>> Create(Transport& host, int configured_device,
                                                    int host_local_rank, bool via_mpi,
                                                    int64_t fusion_bytes);
  ~CudaBackend() override;

  int device() const override { return device_; }
  bool via_mpi() const override { return via_mpi_; }
  int64_t staged_bytes() const override { return data_->staged_bytes(); }
  std::vector<CommGroup> communicators() const override { return data_->communicators(); }
  Status CheckDevice(int device_index) const override;
  Result<GpuEventPtr> RecordReady(StreamHandle caller_stream) override;
  Status StreamWait(StreamHandle caller_stream, const GpuEvent& done) override;
  Status HostWait(const GpuEvent& done) override;
  Result<bool> HostWaitFor(const GpuEvent& done, std::chrono::microseconds limit) override;
  Result<bool> Reached(const GpuEvent& done) override;

  Status EnterDevice() override;
  void LeaveDevice() override;
  Status Prepare(CommGroup group) override;
  Status WaitReady(const GpuEvent& ready) override;
  Transport& transport() override { return *data_; }
  Status Copy(void* dst, const void* src, int64_t bytes) override;
  Status Scale(void* buffer, int64_t count, DataType dtype, double factor) override;
  Result<void*> FusionBuffer(int64_t bytes) override;
  Result<GpuEventPtr> RecordDone() override;
  Result<std::shared_ptr<void>> AllocateOutput(int64_t bytes) override;
  Result<void*> Workspace(int slot, int64_t bytes) override;
  Status GroupStart() override { return data_->GroupStart(); }
  Status Send(const void* buffer, int64_t bytes, int peer, CommGroup group) override {
    return data_->Send(buffer, bytes, peer, 0, group);
  }
  Status Recv(void* buffer, int64_t bytes, int peer, CommGroup group) override {
    return data_->Recv(buffer, bytes, peer, 0, group);
  }
  Status GroupEnd() override { return data_->GroupEnd(); }
  Status WeightedStore(void* acc, const void* x, DataType dtype, double w, int64_t count) override;
  Status WeightedAccumulate(void* acc, const void* x, DataType dtype, double w,
                            int64_t count) override;
  Status StoreAccumulator(void* out, const void* acc, DataType dtype, int64_t count) override;
  Status CheckAsyncErrors() override;
  Status Shutdown() override;

 private:
  CudaBackend(int device, cudaStream_t stream, std::unique_ptr<DeviceTransport> data);
  Status OnDevice() const;  // the calling thread's current device := device_
  Result<GpuEventPtr> Record(cudaStream_t stream, const char* what);
  Status Failure() const;  // the sticky asynchronous failure (any thread)
  Status Drain(std::chrono::seconds limit);

  const int device_;
  bool via_mpi_ = false;
  cudaStream_t stream_;
  std::unique_ptr<DeviceTransport> data_;  // NCCL, or MPI through pinned memory
  struct Scratch {
    void* data = nullptr;
    int64_t bytes = 0;
  };
  Scratch workspaces_[kWorkspaceSlots];
  bool shut_down_ = false;
  int saved_device_ = -1;  // the driving thread's device, between EnterDevice and LeaveDevice
  mutable std::mutex failure_mutex_;
  Status failure_;  // set by the engine's CheckAsyncErrors, read by waiting callers
};

}  // namespace flock
