// The fake device's runtime behaves as the GPU path will rely on: copies in
// stream order, events that order two streams (and, without the wait, the
// stale read the delay provokes), pointer checks, and a machine without a driver.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

// The host function of the "slow producer": writes 1s after a pause.
void FillOnes(void* data) {
  auto* p = static_cast<float*>(data);
  for (int i = 0; i < 1024; ++i) p[i] = 1.0f;
}

TEST(FakeCuda, CopiesRunInStreamOrder) {
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 1024 * sizeof(float)), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::vector<float> in(1024, 3.0f), out(1024, 0.0f);
  ASSERT_EQ(cudaMemcpyAsync(device, in.data(), 4096, cudaMemcpyHostToDevice, stream), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 0, 8, stream), cudaSuccess);  // the first two floats
  ASSERT_EQ(cudaMemcpyAsync(out.data(), device, 4096, cudaMemcpyDeviceToHost, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_EQ(out[1023], 3.0f);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

// Stream A fills a buffer late (a delayed host function); stream B copies it
// out. With B waiting for an event recorded on A, B sees the 1s; without the
// wait, B's copy runs first and sees the old 0s — the fake makes a missing
// stream wait visible. (That second case is a race on purpose: under TSan it
// is reported, which is why this suite is not in the TSan step.)
std::vector<float> CopyAfterSlowFill(bool wait) {
  float* device = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 4096), cudaSuccess);
  cudaStream_t a, b;
  cudaEvent_t filled;
  EXPECT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(device, 0, 4096, a), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  auto pause = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); };
  EXPECT_EQ(cudaLaunchHostFunc(a, pause, nullptr), cudaSuccess);
  EXPECT_EQ(cudaLaunchHostFunc(a, FillOnes, device), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(filled, a), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(filled), cudaErrorNotReady);
  if (wait) {
    EXPECT_EQ(cudaStreamWaitEvent(b, filled, 0), cudaSuccess);
  }
  std::vector<float> out(1024, -1.0f);
  EXPECT_EQ(cudaMemcpyAsync(out.data(), device, 4096, cudaMemcpyDeviceToHost, b), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(filled), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(filled), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(filled), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(b), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  return out;
}

TEST(FakeCuda, AnEventOrdersTwoStreamsAndItsAbsenceIsVisible) {
  EXPECT_EQ(CopyAfterSlowFill(true), std::vector<float>(1024, 1.0f));
  EXPECT_EQ(CopyAfterSlowFill(false), std::vector<float>(1024, 0.0f));
}

TEST(FakeCuda, PointersAreCheckedAndDescribed) {
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device, 100), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 100), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaPointerAttributes attributes;
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, static_cast<char*>(device) + 50), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 1);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, pinned), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  int local = 0;
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, &local), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);
  // A copy past the allocation's end, or of the wrong kind, is refused.
  std::vector<char> host(200);
  EXPECT_EQ(cudaMemcpyAsync(device, host.data(), 101, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(host.data(), device, 10, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaSetDevice(4), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaFree(pinned), cudaErrorInvalidValue);  // pinned memory is freed with cudaFreeHost
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST(FakeCuda, WithoutADriverEveryCallFailsWithTheRealError) {
  setenv("FAKE_CUDA_DRIVER", "missing", 1);
  int count = -1;
  const cudaError_t error = cudaGetDeviceCount(&count);
  void* p = nullptr;
  const cudaError_t malloc_error = cudaMalloc(&p, 16);
  unsetenv("FAKE_CUDA_DRIVER");
  EXPECT_EQ(error, cudaErrorInsufficientDriver);
  EXPECT_EQ(count, -1);
  EXPECT_EQ(malloc_error, cudaErrorInsufficientDriver);
  EXPECT_EQ(std::string(cudaGetErrorString(error)),
            "CUDA driver version is insufficient for CUDA runtime version");
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 4);
}

// CUDA's rules for pageable host memory: a copy from it may reuse the source
// at once (staged at the call); a copy into it returns when done. cudaFree
// waits for the device's work.
TEST(FakeCuda, PageableCopiesFollowCudasRulesAndFreeDrainsTheDevice) {
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 4096), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  auto pause = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); };
  ASSERT_EQ(cudaLaunchHostFunc(stream, pause, nullptr), cudaSuccess);
  std::vector<float> source(1024, 5.0f);
  ASSERT_EQ(cudaMemcpyAsync(device, source.data(), 4096, cudaMemcpyHostToDevice, stream),
            cudaSuccess);
  source.assign(1024, -5.0f);  // reused before the copy ran: the copy still sees 5s
  std::vector<float> out(1024, 0.0f);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), device, 4096, cudaMemcpyDeviceToHost, stream), cudaSuccess);
  EXPECT_EQ(out, std::vector<float>(1024, 5.0f));  // no synchronize needed
  ASSERT_EQ(cudaLaunchHostFunc(stream, pause, nullptr), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(stream, FillOnes, device), cudaSuccess);
  ASSERT_EQ(cudaFree(device), cudaSuccess);  // after FillOnes ran, not under it
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
