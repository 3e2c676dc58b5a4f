// The launch layer: every flock kernel is a body run once per element index,
// written with FLOCK_HD functors so that one source serves two builds.
//   - nvcc (__CUDACC__): a grid-stride kernel on the stream.
//   - the fake-device test build (device_kernels.cu compiled as C++): the same
//     body runs on the host, as a host function queued on the stream, so it
//     is ordered with the copies and NCCL calls around it as a kernel would be.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "flock/common/hd.h"

namespace flock::gpu {

constexpr int kThreadsPerBlock = 256;
// Enough blocks to fill the largest GPUs several times over; larger tensors
// loop (grid stride) instead of launching more.
constexpr int64_t kMaxBlocks = 4096;

#if defined(__CUDACC__)

template <typename Body>
__global__ void ForEachKernel(int64_t n, Body body) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    body(i);
  }
}

// Queues body(i) for i in [0, n) on `stream`. Returns this launch's error (a
// bad configuration, no device); errors while it runs surface later, on the
// stream's events. cudaLaunchKernel rather than <<<>>> + cudaGetLastError:
// the latter would also report (and clear) an earlier error of the caller's
// own, whose thread may be the one driving flock's loop (Horovod #2230).
template <typename Body>
cudaError_t ForEachElement(cudaStream_t stream, int64_t n, const Body& body) {
  if (n <= 0) return cudaSuccess;
  const int64_t blocks =
      std::min<int64_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
  Body copy = body;
  void* args[] = {&n, &copy};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&ForEachKernel<Body>),
                          dim3(static_cast<unsigned>(blocks)), dim3(kThreadsPerBlock), args, 0,
                          stream);
}

#else  // the fake-device build: the body runs on the host, in stream order

template <typename Body>
struct HostKernel {
  int64_t n;
  Body body;
  static void Run(void* self) {
    auto* kernel = static_cast<HostKernel*>(self);
    for (int64_t i = 0; i < kernel->n; ++i) kernel->body(i);
    delete kernel;
  }
};

template <typename Body>
cudaError_t ForEachElement(cudaStream_t stream, int64_t n, const Body& body) {
  if (n <= 0) return cudaSuccess;
  auto* kernel = new HostKernel<Body>{n, body};
  const cudaError_t error = cudaLaunchHostFunc(stream, &HostKernel<Body>::Run, kernel);
  if (error != cudaSuccess) delete kernel;
  return error;
}

#endif

}  // namespace flock::gpu
