// The fake device's CUDA runtime, part 1: devices, memory, errors (tests only,
// never shipped; docs/design/gpu-fake-device.md). Defined against the
// toolkit's own headers, so the signatures are the real ones; linked instead
// of libcudart in the fake-device test build.
//
//   - device memory is host memory, tracked, so that copies and pointer
//     queries tell device from host and catch a range outside an allocation;
//   - FAKE_CUDA_DEVICES devices (4 by default); FAKE_CUDA_DRIVER=missing makes
//     every call fail as on a machine without a driver
//     (cudaErrorInsufficientDriver), as on this project's machines.
// Streams and events: fake_cuda_streams.cc.
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_cuda_internal.h"

namespace flock::fake {
namespace {

struct Allocation {
  size_t bytes;
  int device;  // -1: pinned host memory
};

struct Registry {
  std::mutex mutex;
  std::map<const char*, Allocation> allocations;  // by start address
  std::map<int, std::unique_ptr<CUstream_st>> default_streams;
  std::set<Stream*> streams;  // made by cudaStreamCreate*
};

Registry& Global() {
  static Registry* registry = new Registry;  // never destroyed: worker threads may still run
  return *registry;
}

thread_local int current_device = 0;

// The allocation holding [p, p + bytes), or null. Holds the registry's lock.
const Allocation* Find(const Registry& r, const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  auto it = r.allocations.upper_bound(c);
  if (it == r.allocations.begin()) return nullptr;
  --it;
  if (c + bytes > it->first + it->second.bytes) return nullptr;
  return &it->second;
}

cudaError_t Allocate(void** p, size_t bytes, int device) {
  if (p == nullptr) return Fail(cudaErrorInvalidValue);
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (*p == nullptr) return Fail(cudaErrorMemoryAllocation);
  Registry& r = Global();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.allocations[static_cast<const char*>(*p)] = Allocation{bytes, device};
  return cudaSuccess;
}

cudaError_t Release(void* p, bool device) {
  if (p == nullptr) return cudaSuccess;
  if (device) SynchronizeDevice(current_device);  // cudaFree waits for the device's work
  Registry& r = Global();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.allocations.find(static_cast<const char*>(p));
    if (it == r.allocations.end() || (it->second.device >= 0) != device)
      return Fail(cudaErrorInvalidValue);
    r.allocations.erase(it);
  }
  std::free(p);
  return cudaSuccess;
}

}  // namespace

bool DriverMissing() {
  const char* text = std::getenv("FAKE_CUDA_DRIVER");
  return text != nullptr && std::string(text) == "missing";
}

int DeviceCount() {
  const char* text = std::getenv("FAKE_CUDA_DEVICES");
  return text == nullptr ? 4 : std::atoi(text);
}

int CurrentDevice() {
  return current_device;
}

cudaError_t& LastError() {
  thread_local cudaError_t last = cudaSuccess;
  return last;
}

cudaError_t Fail(cudaError_t error) {
  LastError() = error;
  return error;
}

Memory MemoryOf(const void* p, size_t bytes) {
  Registry& r = Global();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Allocation* a = Find(r, p, bytes);
  if (a == nullptr) return Memory::kPageable;
  return a->device >= 0 ? Memory::kDevice : Memory::kPinned;
}

void AddStream(Stream* stream) {
  Registry& r = Global();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams.insert(stream);
}

void RemoveStream(Stream* stream) {
  Registry& r = Global();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams.erase(stream);
}

void SynchronizeDevice(int device) {
  std::vector<Stream*> streams;
  {
    Registry& r = Global();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (Stream* s : r.streams) {
      if (s->device() == device) streams.push_back(s);
    }
  }
  for (Stream* s : streams) s->Synchronize();
  StreamOf(nullptr)->Synchronize();
}

Stream* StreamOf(cudaStream_t stream) {
  // 0, cudaStreamLegacy (1) and cudaStreamPerThread (2): the device's default stream.
  if (reinterpret_cast<uintptr_t>(stream) > 2) return &stream->stream;
  Registry& r = Global();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& slot = r.default_streams[current_device];
  if (!slot) slot = std::make_unique<CUstream_st>(current_device);
  return &slot->stream;
}

}  // namespace flock::fake

using flock::fake::Fail;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (count == nullptr) return Fail(cudaErrorInvalidValue);
  *count = flock::fake::DeviceCount();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (device < 0 || device >= flock::fake::DeviceCount()) return Fail(cudaErrorInvalidDevice);
  flock::fake::current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (device == nullptr) return Fail(cudaErrorInvalidValue);
  *device = flock::fake::current_device;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return Fail(cudaErrorInvalidValue);
  *version = flock::fake::DriverMissing() ? 0 : CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return Fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  FAKE_CUDA_NEEDS_DRIVER();
  return flock::fake::Allocate(p, bytes, flock::fake::current_device);
}

cudaError_t cudaFree(void* p) {
  FAKE_CUDA_NEEDS_DRIVER();
  return flock::fake::Release(p, true);
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  FAKE_CUDA_NEEDS_DRIVER();
  return flock::fake::Allocate(p, bytes, -1);
}

cudaError_t cudaFreeHost(void* p) {
  FAKE_CUDA_NEEDS_DRIVER();
  return flock::fake::Release(p, false);
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  FAKE_CUDA_NEEDS_DRIVER();
  if (attributes == nullptr) return Fail(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof(*attributes));
  flock::fake::Registry& r = flock::fake::Global();
  std::lock_guard<std::mutex> lock(r.mutex);
  const flock::fake::Allocation* a = flock::fake::Find(r, p, 1);
  const bool device = a != nullptr && a->device >= 0;
  attributes->type = a == nullptr ? cudaMemoryTypeUnregistered
                     : device     ? cudaMemoryTypeDevice
                                  : cudaMemoryTypeHost;
  attributes->device = device ? a->device : -2;
  attributes->devicePointer = a != nullptr ? const_cast<void*>(p) : nullptr;
  attributes->hostPointer = a != nullptr && !device ? const_cast<void*>(p) : nullptr;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t error = flock::fake::LastError();
  flock::fake::LastError() = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError(void) {
  return flock::fake::LastError();
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInsufficientDriver:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    default: return "unknown error";
  }
}

}  // extern "C"
