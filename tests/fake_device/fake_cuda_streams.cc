// The fake device's CUDA runtime, part 2: copies, streams, events and host
// functions, all ordered on fake::Stream queues (see fake_cuda_runtime.cc).
#include <cstring>
#include <memory>
#include <vector>

#include "fake_cuda_internal.h"

using flock::fake::Fail;
using flock::fake::Memory;
using flock::fake::MemoryOf;
using flock::fake::StreamOf;

namespace {

// What each kind of copy needs of its pointers (cudaMemcpyDefault: anything).
bool CopyPointersFit(Memory dst, Memory src, cudaMemcpyKind kind) {
  const bool to_device = dst == Memory::kDevice, from_device = src == Memory::kDevice;
  switch (kind) {
    case cudaMemcpyHostToDevice: return to_device && !from_device;
    case cudaMemcpyDeviceToHost: return from_device && !to_device;
    case cudaMemcpyDeviceToDevice: return from_device && to_device;
    case cudaMemcpyHostToHost: return !from_device && !to_device;
    case cudaMemcpyDefault: return true;
  }
  return false;
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return Fail(cudaErrorInvalidValue);
  const Memory to = MemoryOf(dst, bytes), from = MemoryOf(src, bytes);
  if (!CopyPointersFit(to, from, kind)) return Fail(cudaErrorInvalidValue);
  flock::fake::Stream* s = StreamOf(stream);
  if (from == Memory::kPageable) {
    // CUDA stages pageable memory at the call: the caller may reuse it at once.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    s->Enqueue([dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else {
    s->Enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }
  if (to == Memory::kPageable)
    s->Synchronize();  // into pageable memory: returns when done, as CUDA does
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (bytes == 0) return cudaSuccess;
  if (MemoryOf(p, bytes) != Memory::kDevice) return Fail(cudaErrorInvalidValue);
  StreamOf(stream)->Enqueue([p, value, bytes] { std::memset(p, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int /*flags*/) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (stream == nullptr) return Fail(cudaErrorInvalidValue);
  *stream = new CUstream_st(flock::fake::CurrentDevice());
  flock::fake::AddStream(&(*stream)->stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (reinterpret_cast<uintptr_t>(stream) <= 2) return Fail(cudaErrorInvalidResourceHandle);
  flock::fake::RemoveStream(&stream->stream);
  delete stream;  // runs what is queued first, as the device would
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  FAKE_CUDA_NEEDS_DRIVER();
  StreamOf(stream)->Synchronize();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  FAKE_CUDA_NEEDS_DRIVER();
  return StreamOf(stream)->Idle() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaDeviceSynchronize(void) {
  FAKE_CUDA_NEEDS_DRIVER();
  flock::fake::SynchronizeDevice(flock::fake::CurrentDevice());
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int /*flags*/) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (event == nullptr) return Fail(cudaErrorInvalidValue);
  *event = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  delete event;  // queued markers and waits keep its state
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  event->event.Record(*StreamOf(stream));
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  return event->event.Complete() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  event->event.Synchronize();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int /*flags*/) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  event->event.MakeWait(*StreamOf(stream));
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (fn == nullptr) return Fail(cudaErrorInvalidValue);
  StreamOf(stream)->Enqueue([fn, user_data] { fn(user_data); });
  return cudaSuccess;
}

}  // extern "C"
