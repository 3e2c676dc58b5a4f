// What the fake runtime's files share (fake_cuda_runtime.cc, fake_cuda_streams.cc).
#pragma once

#include <cuda_runtime_api.h>

#include "fake_stream.h"

struct CUstream_st {
  explicit CUstream_st(int device) : stream(device) {}
  flock::fake::Stream stream;
};
struct CUevent_st {
  flock::fake::Event event;
};

namespace flock::fake {

bool DriverMissing();
cudaError_t Fail(cudaError_t error);  // records it for cudaGetLastError
// Where [p, p + bytes) lies: inside one cudaMalloc or one cudaMallocHost
// allocation, or anywhere else (pageable host memory, for the fake).
enum class Memory { kDevice, kPinned, kPageable };
Memory MemoryOf(const void* p, size_t bytes);
// Streams made by cudaStreamCreate*, so that cudaFree and cudaDeviceSynchronize
// can drain the device as the real ones do.
void AddStream(Stream* stream);
void RemoveStream(Stream* stream);
void SynchronizeDevice(int device);
Stream* StreamOf(cudaStream_t stream);  // 0, 1 and 2: the current device's default
int CurrentDevice();
void SetCurrentDevice(int device);
int DeviceCount();         // FAKE_CUDA_DEVICES, 4 by default
cudaError_t& LastError();  // this thread's

}  // namespace flock::fake

#define FAKE_CUDA_NEEDS_DRIVER() \
  if (flock::fake::DriverMissing()) return flock::fake::Fail(cudaErrorInsufficientDriver)
