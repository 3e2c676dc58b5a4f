// The fake NCCL with ranks as threads: comm queries, and send/recv in groups
// matching whatever order each rank called them in (as in real NCCL), a ring
// of several rounds enqueued back to back, and messages to one peer in order.
#include <cstring>
#include <utility>

#include "fake_nccl_test_support.h"

namespace fake_nccl_test {
namespace {

class FakeNcclP2p : public ::testing::TestWithParam<int> {};

TEST(FakeNccl, VersionAndErrorStrings) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(42)), "unknown result code");
}

TEST_P(FakeNcclP2p, CommKnowsItsRankSizeAndDevice) {
  RunRanks(GetParam(), [](Rank& me) {
    int count = -1, device = -1, rank = -1;
    EXPECT_EQ(ncclCommCount(me.comm, &count), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(me.comm, &device), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(me.comm, &rank), ncclSuccess);
    EXPECT_EQ(count, me.nranks);
    EXPECT_EQ(device, me.rank);
    EXPECT_EQ(rank, me.rank);
    ncclResult_t error = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(me.comm, &error), ncclSuccess);
    EXPECT_EQ(error, ncclSuccess);
    EXPECT_EQ(ncclCommFinalize(me.comm), ncclSuccess);
  });
}

// Every pair swaps 1 MiB in one group: the lower rank calls recv first, the
// higher send first. Far more than a socket buffer holds, so this passes only
// if the group posts all its sends and receives at once.
TEST_P(FakeNcclP2p, GroupedSendRecvMatchInEitherCallOrder) {
  const size_t n = 256 * 1024;
  RunRanks(GetParam(), [&](Rank& me) {
    std::vector<float> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(me.rank * 1000 + i % 1000);
    float* send = ToDevice(mine, me.stream);
    std::vector<float*> recv(me.nranks, nullptr);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int peer = 0; peer < me.nranks; ++peer) {
      if (peer == me.rank) continue;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&recv[peer]), n * sizeof(float)), cudaSuccess);
      if (me.rank < peer) {
        ASSERT_EQ(ncclRecv(recv[peer], n, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
        ASSERT_EQ(ncclSend(send, n, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
      } else {
        ASSERT_EQ(ncclSend(send, n, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
        ASSERT_EQ(ncclRecv(recv[peer], n, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
      }
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int peer = 0; peer < me.nranks; ++peer) {
      if (peer == me.rank) continue;
      const std::vector<float> got = ToHost(recv[peer], n, me.stream);
      bool same = true;
      for (size_t i = 0; i < n && same; ++i)
        same = got[i] == static_cast<float>(peer * 1000 + i % 1000);
      EXPECT_TRUE(same) << "rank " << me.rank << " from " << peer;
      EXPECT_EQ(cudaFree(recv[peer]), cudaSuccess);
    }
    EXPECT_EQ(cudaFree(send), cudaSuccess);
  });
}

// Five rounds of "send to the next, receive from the previous", enqueued
// without a host wait; after k rounds rank r holds rank (r - k)'s data. At
// one rank the ring is a send to itself.
TEST_P(FakeNcclP2p, RingExchange) {
  const size_t n = 1000;
  const int rounds = 5;
  RunRanks(GetParam(), [&](Rank& me) {
    std::vector<int32_t> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = static_cast<int32_t>(me.rank * 100000 + i);
    int32_t* a = ToDevice(mine, me.stream);
    int32_t* b = ToDevice(std::vector<int32_t>(n, -1), me.stream);
    const int next = (me.rank + 1) % me.nranks, prev = (me.rank + me.nranks - 1) % me.nranks;
    for (int round = 0; round < rounds; ++round) {
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      ASSERT_EQ(ncclSend(a, n, ncclInt32, next, me.comm, me.stream), ncclSuccess);
      ASSERT_EQ(ncclRecv(b, n, ncclInt32, prev, me.comm, me.stream), ncclSuccess);
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      std::swap(a, b);
    }
    const int origin = ((me.rank - rounds) % me.nranks + me.nranks) % me.nranks;
    const std::vector<int32_t> got = ToHost(a, n, me.stream);
    EXPECT_EQ(got[0], origin * 100000);
    EXPECT_EQ(got[n - 1], static_cast<int32_t>(origin * 100000 + n - 1));
    EXPECT_EQ(cudaFree(a), cudaSuccess);
    EXPECT_EQ(cudaFree(b), cudaSuccess);
  });
}

// Several messages to one peer in one group arrive in call order, also when
// mixed with a collective.
TEST_P(FakeNcclP2p, MessagesToOnePeerKeepTheirOrder) {
  RunRanks(GetParam(), [&](Rank& me) {
    const int next = (me.rank + 1) % me.nranks, prev = (me.rank + me.nranks - 1) % me.nranks;
    int64_t* small = ToDevice(std::vector<int64_t>(3, me.rank), me.stream);
    int64_t* large = ToDevice(std::vector<int64_t>(70000, 10 + me.rank), me.stream);
    int64_t* got_small = ToDevice(std::vector<int64_t>(3, -1), me.stream);
    int64_t* got_large = ToDevice(std::vector<int64_t>(70000, -1), me.stream);
    int64_t* sum = ToDevice(std::vector<int64_t>(1, 0), me.stream);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclRecv(got_small, 3, ncclInt64, prev, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclSend(small, 3, ncclInt64, next, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(small, sum, 1, ncclInt64, ncclSum, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclSend(large, 70000, ncclInt64, next, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(got_large, 70000, ncclInt64, prev, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(ToHost(got_small, 3, me.stream), std::vector<int64_t>(3, prev));
    EXPECT_EQ(ToHost(got_large, 70000, me.stream), std::vector<int64_t>(70000, 10 + prev));
    EXPECT_EQ(ToHost(sum, 1, me.stream)[0], int64_t{me.nranks} * (me.nranks - 1) / 2);
    for (int64_t* p : {small, large, got_small, got_large, sum})
      EXPECT_EQ(cudaFree(p), cudaSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(Np, FakeNcclP2p, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace fake_nccl_test
