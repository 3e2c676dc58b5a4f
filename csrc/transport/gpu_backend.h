// GpuBackend: what the engine and the bindings need of the GPU, without CUDA
// types (the engine compiles the same in a CPU-only build, where no backend
// exists). One per process, made at the first CUDA tensor: a job that never
// uses one never initialises CUDA.
//
// Stream order: every engine-side call queues work on the backend's own
// communication stream and returns at once. An op's inputs are ready once the
// caller's stream reaches the *ready* event recorded when it was submitted;
// its outputs are ready once the communication stream reaches the *done*
// event recorded after its last piece of work. Nobody blocks the host on the
// GPU except a user who asks to (Synchronize).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"
#include "flock/transport/data_path.h"

namespace flock {

// A point in a CUDA stream (a recorded event); destroyed when the last owner
// lets go, which CUDA allows while it is still pending.
class GpuEvent {
 public:
  virtual ~GpuEvent() = default;
};
using GpuEventPtr = std::shared_ptr<const GpuEvent>;

// A CUDA stream of the caller, as an integer (0: the legacy default stream),
// the form frameworks hand it over in (torch's `cuda_stream`).
using StreamHandle = uintptr_t;

class GpuBackend : public DataPath {
 public:
  virtual int device() const = 0;  // the CUDA device this rank uses
  // FLOCK_GPU_VIA_MPI=1: device data goes over MPI through pinned memory
  // (staged_bytes so far), not NCCL.
  virtual bool via_mpi() const = 0;
  virtual int64_t staged_bytes() const = 0;
  virtual std::vector<CommGroup> communicators() const = 0;  // made so far

  // Caller's thread. An error when `device_index` is not this rank's device.
  virtual Status CheckDevice(int device_index) const = 0;
  virtual Result<GpuEventPtr> RecordReady(StreamHandle caller_stream) = 0;
  // Makes `caller_stream` wait for `done` (returns at once), or blocks the
  // host until `done` is reached.
  virtual Status StreamWait(StreamHandle caller_stream, const GpuEvent& done) = 0;
  virtual Status HostWait(const GpuEvent& done) = 0;
  // HostWait for at most `limit`: false when not reached by then.
  virtual Result<bool> HostWaitFor(const GpuEvent& done, std::chrono::microseconds limit) = 0;
  // Whether the GPU has reached `done`, without blocking.
  virtual Result<bool> Reached(const GpuEvent& done) = 0;

  // Engine thread (or the caller driving its loop), stream ordered on the
  // communication stream, between EnterDevice and LeaveDevice (which restores
  // the thread's current device).
  virtual Status EnterDevice() = 0;
  virtual void LeaveDevice() = 0;
  // Readies `group`'s communicator (outside any NCCL group); every member calls it.
  virtual Status Prepare(CommGroup group) = 0;
  virtual Status WaitReady(const GpuEvent& ready) = 0;
  // DataPath: transport() is NCCL over the host's groups; the copies, the
  // scaling and the fusion buffer are on the device (the stream order keeps
  // one op's use of the buffer from overlapping the next one's).
  virtual Result<GpuEventPtr> RecordDone() = 0;
  // Device memory for an output whose size only the op learns (allgather),
  // freed when the last owner lets go (cudaFree: after the device is idle).
  virtual Result<std::shared_ptr<void>> AllocateOutput(int64_t bytes) = 0;
  // Device scratch memory of at least `bytes` for use `slot` (0 is the fusion
  // buffer; 1-7 the neighbor ops'), reused from call to call.
  static constexpr int kWorkspaceSlots = 8;
  virtual Result<void*> Workspace(int slot, int64_t bytes) = 0;
  // Point-to-point on device memory, `peer` a rank of `group`: Send/Recv
  // between GroupStart and GroupEnd are posted together (NCCL's group), so the
  // order of the calls on the two sides does not matter; all are stream ordered.
  virtual Status GroupStart() = 0;
  virtual Status Send(const void* buffer, int64_t bytes, int peer, CommGroup group) = 0;
  virtual Status Recv(void* buffer, int64_t bytes, int peer, CommGroup group) = 0;
  virtual Status GroupEnd() = 0;
  // The weighted-average kernels of common/weighted_kernels.h, on the device.
  virtual Status WeightedStore(void* acc, const void* x, DataType dtype, double w,
                               int64_t count) = 0;
  virtual Status WeightedAccumulate(void* acc, const void* x, DataType dtype, double w,
                                    int64_t count) = 0;
  virtual Status StoreAccumulator(void* out, const void* acc, DataType dtype, int64_t count) = 0;
  // An asynchronous failure of the communication (a peer lost, a mismatch the
  // library caught, a kernel fault): after one, the backend aborts its
  // communicators and every later call fails with the same error.
  virtual Status CheckAsyncErrors() = 0;
  // Finishes queued work and frees the communicators (before MPI ends).
  virtual Status Shutdown() = 0;
};

}  // namespace flock
