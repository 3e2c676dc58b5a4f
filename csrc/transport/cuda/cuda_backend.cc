#include "flock/transport/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "flock/transport/cuda/cuda_status.h"
#include "flock/transport/cuda/device_kernels.h"
#include "flock/transport/cuda/staged_transport.h"
#include "flock/transport/nccl/nccl_transport.h"

namespace flock {
namespace {

cudaStream_t AsStream(StreamHandle handle) {
  return reinterpret_cast<cudaStream_t>(handle);
}

cudaEvent_t EventOf(const GpuEvent& event) {
  return static_cast<const CudaEvent&>(event).get();
}

// Makes `device` current on this thread for the guard's lifetime and then
// restores the caller's: flock's calls on a user's thread (submitting,
// synchronizing, driving the engine's loop) leave its current device alone.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device)
      status_ =
          gpu::CudaStatus(cudaSetDevice(device), "selecting CUDA device " + std::to_string(device));
  }
  ~DeviceGuard() {
    if (previous_ >= 0 && status_.ok()) (void)cudaSetDevice(previous_);
  }
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

Result<int> ChooseDevice(int configured_device, int local_rank) {
  int count = 0;
  FLOCK_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count), "counting the CUDA devices");
  if (count <= 0) return Status::TransportError("this machine has no CUDA device");
  if (configured_device >= count) {
    return Status::InvalidArgument("FLOCK_DEVICE=" + std::to_string(configured_device) +
                                   " but this machine has " + std::to_string(count) +
                                   " CUDA devices (0 to " + std::to_string(count - 1) + ")");
  }
  return configured_device >= 0 ? configured_device : local_rank % count;
}

}  // namespace

CudaEvent::~CudaEvent() {
  (void)cudaEventDestroy(event_);  // CUDA releases it once reached
}

Result<std::unique_ptr<GpuBackend>> CudaBackend::Create(Transport& host, int configured_device,
                                                        int host_local_rank, bool via_mpi,
                                                        int64_t fusion_bytes) {
  FLOCK_ASSIGN_OR_RETURN(const int device, ChooseDevice(configured_device, host_local_rank));
  const DeviceGuard guard(device);  // the caller's current device is theirs
  FLOCK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = nullptr;
  FLOCK_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                             "creating flock's communication stream");
  std::unique_ptr<DeviceTransport> data;
  if (via_mpi) {
    data = std::make_unique<StagedTransport>(host, stream);
  } else {
    data = std::make_unique<NcclTransport>(host, stream, device);
  }
  auto backend = std::unique_ptr<CudaBackend>(new CudaBackend(device, stream, std::move(data)));
  backend->via_mpi_ = via_mpi;
  if (fusion_bytes > 0) {
    const Status reserved = backend->Workspace(0, fusion_bytes).status();
    if (!reserved.ok()) {
      return Status(reserved.code(),
                    reserved.message() +
                        " (the device fusion buffer: "
                        "FLOCK_FUSION_THRESHOLD bytes; lower it, or 0 to fuse nothing)");
    }
  }
  return std::unique_ptr<GpuBackend>(std::move(backend));
}

CudaBackend::CudaBackend(int device, cudaStream_t stream, std::unique_ptr<DeviceTransport> data)
    : device_(device), stream_(stream), data_(std::move(data)) {}

CudaBackend::~CudaBackend() {
  if (!shut_down_) (void)Shutdown();
}

Status CudaBackend::OnDevice() const {
  return gpu::CudaStatus(cudaSetDevice(device_),
                         "selecting CUDA device " + std::to_string(device_));
}

Status CudaBackend::CheckDevice(int device_index) const {
  if (device_index == device_) return Status::OK();
  return Status::InvalidArgument("the tensor is on cuda:" + std::to_string(device_index) +
                                 " but flock uses cuda:" + std::to_string(device_) +
                                 " on this rank (set by FLOCK_DEVICE, else the local rank modulo "
                                 "the device count); move the tensor there");
}

Result<GpuEventPtr> CudaBackend::Record(cudaStream_t stream, const char* what) {
  const DeviceGuard guard(device_);
  FLOCK_RETURN_IF_ERROR(guard.status());
  cudaEvent_t event = nullptr;
  FLOCK_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                             std::string("creating the event ") + what);
  auto owned = std::make_shared<const CudaEvent>(event);
  FLOCK_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, stream),
                             std::string("recording the event ") + what);
  return GpuEventPtr(std::move(owned));
}

Result<GpuEventPtr> CudaBackend::RecordReady(StreamHandle caller_stream) {
  return Record(AsStream(caller_stream), "that marks the op's inputs ready");
}

// Waits even after a failure (the caller's memory must not be reused while
// flock's stream may still touch it), then reports the failure.
Status CudaBackend::StreamWait(StreamHandle caller_stream, const GpuEvent& done) {
  const DeviceGuard guard(device_);
  FLOCK_RETURN_IF_ERROR(guard.status());
  FLOCK_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(AsStream(caller_stream), EventOf(done), 0),
                             "making the caller's stream wait for the op");
  return Failure();
}

Status CudaBackend::Failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

Result<bool> CudaBackend::Reached(const GpuEvent& done) {
  const cudaError_t state = cudaEventQuery(EventOf(done));
  if (state == cudaErrorNotReady) return false;
  FLOCK_CUDA_RETURN_IF_ERROR(state, "querying an op's completion event");
  return true;
}

// Polls rather than cudaEventSynchronize, which would never return if the
// communication hangs: the engine's abort after an asynchronous error ends
// this wait. The first 50 us only yield (a short op is seen at once); then
// the pause doubles up to 1 ms.
Result<bool> CudaBackend::HostWaitFor(const GpuEvent& done, std::chrono::microseconds limit) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now(), end = start + limit;
  auto pause = std::chrono::microseconds(5);
  while (true) {
    FLOCK_ASSIGN_OR_RETURN(const bool reached, Reached(done));
    if (reached) {
      FLOCK_RETURN_IF_ERROR(Failure());
      return true;
    }
    const Clock::time_point now = Clock::now();
    if (now >= end) return false;
    if (now - start < std::chrono::microseconds(50)) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, end - now));
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

Status CudaBackend::HostWait(const GpuEvent& done) {
  while (true) {
    FLOCK_ASSIGN_OR_RETURN(const bool reached, HostWaitFor(done, std::chrono::seconds(1)));
    if (reached) return Status::OK();
  }
}

// The engine's loop may run on a caller's thread (a waiting caller drives
// it): the current device is per thread, so each batch sets it first and
// gives the caller's back after.
Status CudaBackend::EnterDevice() {
  if (cudaGetDevice(&saved_device_) != cudaSuccess) saved_device_ = -1;
  return OnDevice();
}

void CudaBackend::LeaveDevice() {
  if (saved_device_ >= 0 && saved_device_ != device_) (void)cudaSetDevice(saved_device_);
  saved_device_ = -1;
}

Status CudaBackend::Prepare(CommGroup group) {
  return data_->Prepare(group);
}

Status CudaBackend::WaitReady(const GpuEvent& ready) {
  return gpu::CudaStatus(cudaStreamWaitEvent(stream_, EventOf(ready), 0),
                         "making flock's stream wait for the op's inputs");
}

Status CudaBackend::Copy(void* dst, const void* src, int64_t bytes) {
  if (bytes == 0 || dst == src) return Status::OK();
  return gpu::CudaStatus(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_),
      "copying " + std::to_string(bytes) + " bytes on the device");
}

Status CudaBackend::Scale(void* buffer, int64_t count, DataType dtype, double factor) {
  return gpu::ScaleInPlace(stream_, buffer, count, dtype, factor);
}

Result<void*> CudaBackend::FusionBuffer(int64_t bytes) {
  return Workspace(0, bytes);
}

// Grows by doubling and never shrinks: cudaFree synchronises the device, so
// it stays off the hot path.
Result<void*> CudaBackend::Workspace(int slot, int64_t bytes) {
  if (slot < 0 || slot >= kWorkspaceSlots) {
    return Status::Internal("device workspace slot " + std::to_string(slot) + " out of range");
  }
  Scratch& scratch = workspaces_[slot];
  if (bytes <= scratch.bytes) return scratch.data;
  FLOCK_RETURN_IF_ERROR(OnDevice());
  const int64_t size = std::max(bytes, 2 * scratch.bytes);
  if (scratch.data != nullptr) {
    FLOCK_CUDA_RETURN_IF_ERROR(cudaFree(scratch.data), "freeing an outgrown device workspace");
    scratch = Scratch{};
  }
  FLOCK_CUDA_RETURN_IF_ERROR(cudaMalloc(&scratch.data, static_cast<size_t>(size)),
                             "allocating a " + std::to_string(size) + "-byte device workspace");
  scratch.bytes = size;
  return scratch.data;
}

Status CudaBackend::WeightedStore(void* acc, const void* x, DataType dtype, double w,
                                  int64_t count) {
  return gpu::WeightedStore(stream_, acc, x, dtype, w, count);
}

Status CudaBackend::WeightedAccumulate(void* acc, const void* x, DataType dtype, double w,
                                       int64_t count) {
  return gpu::WeightedAccumulate(stream_, acc, x, dtype, w, count);
}

Status CudaBackend::StoreAccumulator(void* out, const void* acc, DataType dtype, int64_t count) {
  return gpu::StoreAccumulator(stream_, out, acc, dtype, count);
}

Result<std::shared_ptr<void>> CudaBackend::AllocateOutput(int64_t bytes) {
  void* data = nullptr;
  FLOCK_CUDA_RETURN_IF_ERROR(cudaMalloc(&data, static_cast<size_t>(std::max<int64_t>(bytes, 1))),
                             "allocating a " + std::to_string(bytes) + "-byte device output");
  return std::shared_ptr<void>(data, [](void* p) { (void)cudaFree(p); });
}

Result<GpuEventPtr> CudaBackend::RecordDone() {
  return Record(stream_, "that marks the op done");
}

Status CudaBackend::CheckAsyncErrors() {
  const Status status = data_->CheckAsyncErrors();
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_.ok()) failure_ = status;
  }
  return status;
}

// Bounded: a stream stuck behind a communication that will never complete is
// given up on after `limit` (the communicators are then aborted, not finalized).
Status CudaBackend::Drain(std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (true) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state != cudaErrorNotReady) return gpu::CudaStatus(state, "finishing flock's stream");
    if (std::chrono::steady_clock::now() >= end) {
      return Status::TransportError("flock's CUDA stream did not finish within " +
                                    std::to_string(limit.count()) + " s at shutdown");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status CudaBackend::Shutdown() {
  shut_down_ = true;
  Status status = OnDevice();
  if (status.ok()) status = CheckAsyncErrors();
  if (status.ok()) status = Drain(std::chrono::seconds(30));
  const Status closed = data_->Shutdown();
  if (status.ok()) status = closed;
  for (Scratch& scratch : workspaces_) {
    if (scratch.data != nullptr) (void)cudaFree(scratch.data);
    scratch = Scratch{};
  }
  (void)cudaStreamDestroy(stream_);
  return status;
}

}  // namespace flock
