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
                                                        int host_local_rank, bool via_mpi) {
  FLOCK_ASSIGN_OR_RETURN(const int device, ChooseDevice(configured_device, host_local_rank));
  FLOCK_CUDA_RETURN_IF_ERROR(cudaSetDevice(device),
                             "selecting CUDA device " + std::to_string(device));
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
  FLOCK_RETURN_IF_ERROR(OnDevice());
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

Status CudaBackend::StreamWait(StreamHandle caller_stream, const GpuEvent& done) {
  FLOCK_RETURN_IF_ERROR(OnDevice());
  return gpu::CudaStatus(cudaStreamWaitEvent(AsStream(caller_stream), EventOf(done), 0),
                         "making the caller's stream wait for the op");
}

Result<bool> CudaBackend::Reached(const GpuEvent& done) {
  const cudaError_t state = cudaEventQuery(EventOf(done));
  if (state == cudaErrorNotReady) return false;
  FLOCK_CUDA_RETURN_IF_ERROR(state, "querying an op's completion event");
  return true;
}

// Polls with a growing pause (up to 1 ms) rather than cudaEventSynchronize:
// the latter would never return if the communication hangs, while this lets
// the engine's abort after an asynchronous error end the wait.
Status CudaBackend::HostWait(const GpuEvent& done) {
  auto pause = std::chrono::microseconds(2);
  while (true) {
    FLOCK_ASSIGN_OR_RETURN(const bool reached, Reached(done));
    if (reached) return data_->CheckAsyncErrors();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

// The engine's loop may run on a caller's thread (a waiting caller drives
// it): the current device is per thread, so each batch sets it first.
Status CudaBackend::WaitReady(const GpuEvent& ready) {
  FLOCK_RETURN_IF_ERROR(OnDevice());
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

Result<GpuEventPtr> CudaBackend::RecordDone() {
  return Record(stream_, "that marks the op done");
}

Status CudaBackend::CheckAsyncErrors() {
  return data_->CheckAsyncErrors();
}

Status CudaBackend::Shutdown() {
  shut_down_ = true;
  Status status = OnDevice();
  if (status.ok()) status = data_->CheckAsyncErrors();
  if (status.ok())
    status = gpu::CudaStatus(cudaStreamSynchronize(stream_), "finishing flock's stream");
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
