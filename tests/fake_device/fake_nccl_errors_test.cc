// The fake NCCL reports misuse instead of crashing or hanging: bad arguments
// at the call, and asynchronously (ncclCommGetAsyncError) ranks that disagree
// on an op, a peer that went away, a watchdog for ops that never match, and
// injected failures; a failed comm's stream stays blocked until ncclCommAbort.
#include <cstdlib>
#include <future>
#include <string>

#include "fake_nccl_test_support.h"

namespace fake_nccl_test {
namespace {

// Sets an environment variable for one test, before its ranks start.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) before_ = before;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, before_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_;
  std::string before_;
};

bool Contains(const char* text, const std::string& part) {
  return std::string(text).find(part) != std::string::npos;
}

TEST(FakeNcclErrors, BadArgumentsAreRefusedAtTheCall) {
  RunRanks(1, [](Rank& me) {
    float* device = ToDevice(std::vector<float>(16, 1.0f), me.stream);
    std::vector<float> host(16);
    EXPECT_EQ(ncclAllReduce(host.data(), device, 16, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclInvalidArgument);
    EXPECT_TRUE(Contains(ncclGetLastError(me.comm), "not fake device memory"))
        << ncclGetLastError(me.comm);
    EXPECT_EQ(ncclAllReduce(device, device, 17, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclInvalidArgument);  // one past the allocation
    EXPECT_EQ(ncclSend(device, 16, ncclFloat32, 1, me.comm, me.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclRecv(device, 16, ncclFloat32, -1, me.comm, me.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclBroadcast(device, device, 16, ncclFloat32, 3, me.comm, me.stream),
              ncclInvalidArgument);
    EXPECT_EQ(ncclAllReduce(device, device, 16, static_cast<ncclDataType_t>(12), ncclSum, me.comm,
                            me.stream),
              ncclInvalidArgument);
    EXPECT_EQ(ncclReduce(device, device, 16, ncclFloat32, static_cast<ncclRedOp_t>(5), 0, me.comm,
                         me.stream),
              ncclInvalidArgument);
    EXPECT_EQ(ncclAllGather(device, device, 16, ncclFloat32, nullptr, me.stream),
              ncclInvalidArgument);
    // Memory of another device than the comm's.
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    float* elsewhere = ToDevice(std::vector<float>(16, 1.0f), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(ncclAllReduce(elsewhere, device, 16, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclInvalidArgument);
    EXPECT_TRUE(Contains(ncclGetLastError(me.comm), "device 1")) << ncclGetLastError(me.comm);
    // Refused calls left the comm usable.
    ASSERT_EQ(ncclAllReduce(device, device, 16, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclSuccess);
    EXPECT_EQ(ToHost(device, 16, me.stream), std::vector<float>(16, 1.0f));
    EXPECT_EQ(cudaFree(elsewhere), cudaSuccess);
    EXPECT_EQ(cudaFree(device), cudaSuccess);
  });
}

TEST(FakeNcclErrors, BadInitArguments) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, -1), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument);
  ncclUniqueId bad{};
  EXPECT_EQ(ncclCommInitRank(&comm, 1, bad, 0), ncclInvalidArgument);
  EXPECT_TRUE(Contains(ncclGetLastError(nullptr), "ncclGetUniqueId"));
  EXPECT_EQ(comm, nullptr);
}

TEST(FakeNcclErrors, GroupMisuse) {
  RunRanks(1, [](Rank& me) {
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    float* a = ToDevice(std::vector<float>(4, 1.0f), me.stream);
    // An invalid op fails its group, at the call and at ncclGroupEnd.
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // groups nest
    EXPECT_EQ(ncclAllReduce(a, a, 4, ncclFloat32, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(a, a, 5, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclInvalidArgument);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
    // The fake runs a group on one stream.
    cudaStream_t other;
    ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(a, a, 4, ncclFloat32, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(a, a, 4, ncclFloat32, ncclSum, me.comm, other), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    EXPECT_TRUE(Contains(ncclGetLastError(nullptr), "one stream"));
    // None of it ran, and the comm still works.
    ASSERT_EQ(ncclAllReduce(a, a, 4, ncclFloat32, ncclProd, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ToHost(a, 4, me.stream), std::vector<float>(4, 1.0f));
    EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
    EXPECT_EQ(cudaFree(a), cudaSuccess);
  });
}

TEST(FakeNcclErrors, WithoutADriverNcclNeedsCuda) {
  ScopedEnv missing("FAKE_CUDA_DRIVER", "missing");
  ncclUniqueId id{};
  EXPECT_EQ(ncclGetUniqueId(&id), ncclUnhandledCudaError);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclUnhandledCudaError);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, nullptr, nullptr),
            ncclUnhandledCudaError);
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);  // no device needed
}

// Rank 0 allreduces 4 elements, rank 1 five: both comms fail with both sides'
// calls described; the streams stay blocked until the comms are aborted.
TEST(FakeNcclErrors, RanksDisagreeingOnAnOpFailBothComms) {
  Barrier failed(2);
  RunRanks(2, [&](Rank& me) {
    const size_t count = 4 + me.rank;
    float* data = ToDevice(std::vector<float>(5, 1.0f), me.stream);
    ASSERT_EQ(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclSuccess);
    EXPECT_EQ(AwaitAsyncError(me.comm), ncclInvalidUsage);
    const char* why = ncclGetLastError(me.comm);
    EXPECT_TRUE(Contains(why, "16 bytes") && Contains(why, "20 bytes") &&
                Contains(why, "allreduce"))
        << why;
    EXPECT_EQ(ncclAllReduce(data, data, 4, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclInvalidUsage);  // a failed comm takes no more work
    EXPECT_EQ(cudaStreamQuery(me.stream), cudaErrorNotReady);
    failed.Wait();  // else the first abort could be the other's remote error
    EXPECT_EQ(ncclCommAbort(me.comm), ncclSuccess);
    me.comm = nullptr;
    EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
    EXPECT_EQ(ToHost(data, 5, me.stream), std::vector<float>(5, 1.0f));  // nothing written
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

// Rank 1 leaves before the allreduce: rank 0 sees its socket closed.
TEST(FakeNcclErrors, APeerThatLeftIsARemoteError) {
  std::promise<void> left;
  std::shared_future<void> gone = left.get_future().share();
  RunRanks(2, [&](Rank& me) {
    if (me.rank == 1) {
      EXPECT_EQ(ncclCommDestroy(me.comm), ncclSuccess);
      me.comm = nullptr;
      left.set_value();
      return;
    }
    gone.wait();
    float* data = ToDevice(std::vector<float>(8, 1.0f), me.stream);
    ASSERT_EQ(ncclAllReduce(data, data, 8, ncclFloat32, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(AwaitAsyncError(me.comm), ncclRemoteError);
    EXPECT_TRUE(Contains(ncclGetLastError(me.comm), "rank 1")) << ncclGetLastError(me.comm);
    EXPECT_EQ(ncclCommAbort(me.comm), ncclSuccess);
    me.comm = nullptr;
    EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

// The second op fails on purpose: its stream stays blocked (a hung kernel)
// until ncclCommAbort, which releases it without writing the result.
TEST(FakeNcclErrors, InjectedErrorBlocksTheStreamUntilAbort) {
  RunRanks(2, [](Rank& me) {
    ASSERT_EQ(fake_nccl_inject_error(me.comm, ncclSystemError, 1), ncclSuccess);
    int32_t* data = ToDevice(std::vector<int32_t>(64, 1), me.stream);
    ASSERT_EQ(ncclAllReduce(data, data, 64, ncclInt32, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ToHost(data, 64, me.stream), std::vector<int32_t>(64, 2));
    ASSERT_EQ(ncclAllReduce(data, data, 64, ncclInt32, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(AwaitAsyncError(me.comm), ncclSystemError);
    EXPECT_TRUE(Contains(ncclGetLastError(me.comm), "on purpose")) << ncclGetLastError(me.comm);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(cudaStreamQuery(me.stream), cudaErrorNotReady);
    EXPECT_EQ(ncclCommAbort(me.comm), ncclSuccess);
    me.comm = nullptr;
    EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
    EXPECT_EQ(ToHost(data, 64, me.stream), std::vector<int32_t>(64, 2));
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

TEST(FakeNcclErrors, FailAfterFromTheEnvironment) {
  ScopedEnv fail("FAKE_NCCL_FAIL_AFTER", "2");
  RunRanks(1, [](Rank& me) {
    float* data = ToDevice(std::vector<float>(4, 1.0f), me.stream);
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(ncclAllReduce(data, data, 4, ncclFloat32, ncclSum, me.comm, me.stream),
                ncclSuccess);
    EXPECT_EQ(AwaitAsyncError(me.comm), ncclRemoteError);
    EXPECT_TRUE(Contains(ncclGetLastError(me.comm), "op 2")) << ncclGetLastError(me.comm);
    EXPECT_EQ(ncclCommAbort(me.comm), ncclSuccess);
    me.comm = nullptr;
    EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

// Two ungrouped 1 MiB sends facing each other block, as on GPUs, until the
// watchdog (FAKE_NCCL_TIMEOUT_S) fails them and names the peer.
TEST(FakeNcclErrors, UngroupedSendsFacingEachOtherHitTheWatchdog) {
  ScopedEnv timeout("FAKE_NCCL_TIMEOUT_S", "0.5");
  const size_t n = 256 * 1024;
  Barrier failed(2);
  RunRanks(2, [&](Rank& me) {
    const int peer = 1 - me.rank;
    float* send = ToDevice(std::vector<float>(n, 1.0f), me.stream);
    float* recv = ToDevice(std::vector<float>(n, 0.0f), me.stream);
    ASSERT_EQ(ncclSend(send, n, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv, n, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(AwaitAsyncError(me.comm), ncclSystemError);
    const char* why = ncclGetLastError(me.comm);
    EXPECT_TRUE(Contains(why, "send/recv") && Contains(why, "rank " + std::to_string(peer)) &&
                Contains(why, "FAKE_NCCL_TIMEOUT_S"))
        << why;
    failed.Wait();
    EXPECT_EQ(ncclCommAbort(me.comm), ncclSuccess);
    me.comm = nullptr;
    EXPECT_EQ(cudaStreamSynchronize(me.stream), cudaSuccess);
    EXPECT_EQ(cudaFree(send), cudaSuccess);
    EXPECT_EQ(cudaFree(recv), cudaSuccess);
  });
}

TEST(FakeNcclErrors, InitTimesOutWhenARankNeverJoins) {
  ScopedEnv timeout("FAKE_NCCL_TIMEOUT_S", "0.3");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSystemError);
  EXPECT_TRUE(Contains(ncclGetLastError(nullptr), "FAKE_NCCL_TIMEOUT_S"));
}

// Like NCCL's "duplicate GPU": two ranks of one comm on one device.
TEST(FakeNcclErrors, TwoRanksOnOneDevice) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&id, r] {
      ncclComm_t comm = nullptr;
      EXPECT_EQ(ncclCommInitRank(&comm, 2, id, r), ncclInvalidUsage);
      EXPECT_TRUE(Contains(ncclGetLastError(nullptr), "duplicate GPU"));
    });
  }
  for (std::thread& t : ranks) t.join();
  ScopedEnv allow("FAKE_NCCL_ALLOW_SHARED_DEVICE", "1");
  RunRanks(
      2, [](Rank& me) { EXPECT_EQ(ncclCommFinalize(me.comm), ncclSuccess); },
      [](int) { return 0; });
}

// A group may span comms on one stream; a failure of one fails them all
// (none of the group ran), and each must be aborted.
TEST(FakeNcclErrors, AGroupOverTwoCommsFailsAsOne) {
  ncclUniqueId ids[2];
  ncclComm_t comms[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(ncclGetUniqueId(&ids[i]), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comms[i], 1, ids[i], 0), ncclSuccess);
  }
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  float* data = ToDevice(std::vector<float>(8, 2.0f), stream);
  auto both = [&] {
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(data, data, 8, ncclFloat32, ncclProd, comms[0], stream), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(data, data, 8, ncclFloat32, ncclSum, comms[1], stream), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  };
  both();
  EXPECT_EQ(ToHost(data, 8, stream), std::vector<float>(8, 2.0f));
  ASSERT_EQ(fake_nccl_inject_error(comms[1], ncclInternalError, 0), ncclSuccess);
  both();
  EXPECT_EQ(AwaitAsyncError(comms[0]), ncclInternalError);
  EXPECT_EQ(AwaitAsyncError(comms[1]), ncclInternalError);
  EXPECT_TRUE(Contains(ncclGetLastError(comms[0]), "in a group")) << ncclGetLastError(comms[0]);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(data), cudaSuccess);
}

// ncclCommDestroy lets the comm's queued work finish first.
TEST(FakeNcclErrors, DestroyWaitsForQueuedWork) {
  RunRanks(2, [](Rank& me) {
    double* data = ToDevice(std::vector<double>(32, 0.5), me.stream);
    auto pause = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); };
    ASSERT_EQ(cudaLaunchHostFunc(me.stream, pause, nullptr), cudaSuccess);
    ASSERT_EQ(ncclAllReduce(data, data, 32, ncclFloat64, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(me.comm), ncclSuccess);
    me.comm = nullptr;
    EXPECT_EQ(ToHost(data, 32, me.stream), std::vector<double>(32, 1.0));
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

}  // namespace
}  // namespace fake_nccl_test
