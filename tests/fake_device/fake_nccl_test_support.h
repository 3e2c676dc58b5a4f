// Helpers of the fake NCCL tests: ranks as threads of this process, each with
// its own fake device, stream and comm, and device buffers from host vectors.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_device.h"

namespace fake_nccl_test {

struct Rank {
  int rank = 0, nranks = 0;
  ncclComm_t comm = nullptr;  // set it to null when the body destroyed or aborted it
  cudaStream_t stream = nullptr;
};

// Runs body(rank) on nranks threads; rank r uses fake device device_of(r).
// The comm left in Rank::comm is destroyed after the body.
inline void RunRanks(
    int nranks, const std::function<void(Rank&)>& body,
    const std::function<int(int)>& device_of = [](int r) { return r; }) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      Rank me;
      me.rank = r;
      me.nranks = nranks;
      ASSERT_EQ(cudaSetDevice(device_of(r)), cudaSuccess);
      ASSERT_EQ(cudaStreamCreateWithFlags(&me.stream, cudaStreamNonBlocking), cudaSuccess);
      ASSERT_EQ(ncclCommInitRank(&me.comm, nranks, id, r), ncclSuccess)
          << ncclGetLastError(nullptr);
      body(me);
      EXPECT_EQ(ncclCommDestroy(me.comm), ncclSuccess);
      EXPECT_EQ(cudaStreamDestroy(me.stream), cudaSuccess);
    });
  }
  for (std::thread& t : threads) t.join();
}

// A device copy of `host` (the pageable source is staged at the call).
template <class T>
T* ToDevice(const std::vector<T>& host, cudaStream_t stream) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(
      cudaMemcpyAsync(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
      cudaSuccess);
  return static_cast<T*>(p);
}

// Reads n elements once the stream's earlier work is done (a copy into
// pageable memory returns when complete).
template <class T>
std::vector<T> ToHost(const T* device, size_t n, cudaStream_t stream) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpyAsync(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  return host;
}

// Ranks meet here (once per object), e.g. so that none aborts before all
// have seen their error.
class Barrier {
 public:
  explicit Barrier(int n) : left_(n) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--left_ == 0) all_.notify_all();
    // Bounded, so that a rank that failed an ASSERT early cannot hang the test.
    EXPECT_TRUE(all_.wait_for(lock, std::chrono::seconds(10), [&] { return left_ <= 0; }));
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_;
  int left_;
};

// Polls the comm's async error until it is not ncclSuccess, for up to 10 s.
inline ncclResult_t AwaitAsyncError(ncclComm_t comm) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ncclResult_t error = ncclSuccess;
  while (std::chrono::steady_clock::now() < deadline) {
    EXPECT_EQ(ncclCommGetAsyncError(comm, &error), ncclSuccess);
    if (error != ncclSuccess) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return error;
}

}  // namespace fake_nccl_test
