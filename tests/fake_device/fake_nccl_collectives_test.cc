// The fake NCCL's collectives with ranks as threads, at np 1-4: allreduce of
// every reduction for float32/64, float16, bfloat16 and int32 against a
// straightforward reference (rank order, halves rounded after every step,
// CUDA's own conversions), compared bit for bit on every rank; broadcast
// from a non-zero root, reduce, allgather, their in-place forms, and an op
// waiting for the work enqueued before it on its stream.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "fake_nccl_test_support.h"

namespace fake_nccl_test {
namespace {

class FakeNcclCollectives : public ::testing::TestWithParam<int> {};

// T as stored, computed in C (halves in float, as NCCL reduces them).
template <class T>
struct Ref {
  using C = T;
  static C Load(T v) { return v; }
  static T Store(C c) { return c; }
};
template <>
struct Ref<__half> {
  using C = float;
  static float Load(__half v) { return __half2float(v); }
  static __half Store(float c) { return __float2half_rn(c); }
};
template <>
struct Ref<__nv_bfloat16> {
  using C = float;
  static float Load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __nv_bfloat16 Store(float c) { return __float2bfloat16_rn(c); }
};

// Rank r's input; near 1 for products, so that they stay finite and exact-ish.
template <class T>
std::vector<T> Input(int r, size_t n, ncclRedOp_t op) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    double x;
    if (std::is_integral_v<T>) {
      x = op == ncclProd ? 1 + (i + r) % 3 : static_cast<double>((i * 7 + r * 13) % 17) - 8;
    } else {
      x = op == ncclProd ? 0.75 + 0.125 * ((i + 3 * r) % 5)
                         : (static_cast<double>((i * 7 + r * 13) % 17) - 8) * 0.37;
    }
    v[i] = Ref<T>::Store(static_cast<typename Ref<T>::C>(x));
  }
  return v;
}

template <class T>
std::vector<T> Expected(const std::vector<std::vector<T>>& in, ncclRedOp_t op) {
  using C = typename Ref<T>::C;
  const int n = static_cast<int>(in.size());
  std::vector<T> out(in[0].size());
  for (size_t i = 0; i < out.size(); ++i) {
    C acc = Ref<T>::Load(in[0][i]);
    for (int r = 1; r < n; ++r) {
      const C x = Ref<T>::Load(in[r][i]);
      C y = op == ncclProd  ? acc * x
            : op == ncclMax ? std::max(acc, x)
            : op == ncclMin ? std::min(acc, x)
                            : acc + x;
      acc = Ref<T>::Load(Ref<T>::Store(y));
    }
    if (op == ncclAvg) acc = std::is_integral_v<C> ? acc / n : acc * (C{1} / n);
    out[i] = Ref<T>::Store(acc);
  }
  return out;
}

template <class T>
void CheckAllReduce(Rank& me, ncclDataType_t dtype, ncclRedOp_t op) {
  const size_t n = 777;
  std::vector<std::vector<T>> all;
  for (int r = 0; r < me.nranks; ++r) all.push_back(Input<T>(r, n, op));
  T* send = ToDevice(all[me.rank], me.stream);
  T* recv = ToDevice(std::vector<T>(n), me.stream);
  ASSERT_EQ(ncclAllReduce(send, recv, n, dtype, op, me.comm, me.stream), ncclSuccess);
  const std::vector<T> got = ToHost(recv, n, me.stream), expected = Expected(all, op);
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), n * sizeof(T)), 0)
      << "rank " << me.rank << " of " << me.nranks << ", dtype " << dtype << ", op " << op;
  EXPECT_EQ(cudaFree(send), cudaSuccess);
  EXPECT_EQ(cudaFree(recv), cudaSuccess);
}

TEST_P(FakeNcclCollectives, AllReduceEveryOpAndTypeBitIdentical) {
  RunRanks(GetParam(), [](Rank& me) {
    for (ncclRedOp_t op : {ncclSum, ncclAvg, ncclMin, ncclMax, ncclProd}) {
      CheckAllReduce<float>(me, ncclFloat32, op);
      CheckAllReduce<double>(me, ncclFloat64, op);
      CheckAllReduce<__half>(me, ncclFloat16, op);
      CheckAllReduce<__nv_bfloat16>(me, ncclBfloat16, op);
      CheckAllReduce<int32_t>(me, ncclInt32, op);
    }
  });
}

TEST_P(FakeNcclCollectives, AllReduceInPlace) {
  RunRanks(GetParam(), [](Rank& me) {
    float* data = ToDevice(std::vector<float>(300, me.rank + 1.0f), me.stream);
    ASSERT_EQ(ncclAllReduce(data, data, 300, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclSuccess);
    EXPECT_EQ(ToHost(data, 300, me.stream),
              std::vector<float>(300, me.nranks * (me.nranks + 1) / 2));
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

// Rank r gets block r of the reduction: the all-reduce's reference, sliced.
TEST_P(FakeNcclCollectives, ReduceScatterGivesEachRankItsBlock) {
  RunRanks(GetParam(), [](Rank& me) {
    const size_t block = 101;
    const size_t n = block * static_cast<size_t>(me.nranks);
    std::vector<std::vector<float>> all;
    for (int r = 0; r < me.nranks; ++r) all.push_back(Input<float>(r, n, ncclSum));
    float* send = ToDevice(all[me.rank], me.stream);
    float* recv = ToDevice(std::vector<float>(block), me.stream);
    ASSERT_EQ(ncclReduceScatter(send, recv, block, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclSuccess);
    const std::vector<float> expected = Expected(all, ncclSum);
    const std::vector<float> got = ToHost(recv, block, me.stream);
    EXPECT_EQ(std::memcmp(got.data(), expected.data() + me.rank * block, block * sizeof(float)), 0)
        << "rank " << me.rank << " of " << me.nranks;
    EXPECT_EQ(cudaFree(send), cudaSuccess);
    EXPECT_EQ(cudaFree(recv), cudaSuccess);
  });
}

TEST_P(FakeNcclCollectives, BroadcastFromTheLastRank) {
  RunRanks(GetParam(), [](Rank& me) {
    const int root = me.nranks - 1;
    std::vector<double> theirs(500);
    for (size_t i = 0; i < theirs.size(); ++i) theirs[i] = i * 0.5 + 1;
    double* send = ToDevice(me.rank == root ? theirs : std::vector<double>(500, -1), me.stream);
    double* recv = ToDevice(std::vector<double>(500, -2), me.stream);
    const double* root_send = me.rank == root ? send : nullptr;  // only the root's is read
    ASSERT_EQ(ncclBroadcast(root_send, recv, 500, ncclFloat64, root, me.comm, me.stream),
              ncclSuccess);
    ASSERT_EQ(ncclBroadcast(send, send, 500, ncclFloat64, root, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ToHost(recv, 500, me.stream), theirs);
    EXPECT_EQ(ToHost(send, 500, me.stream), theirs);
    EXPECT_EQ(cudaFree(send), cudaSuccess);
    EXPECT_EQ(cudaFree(recv), cudaSuccess);
  });
}

TEST_P(FakeNcclCollectives, ReduceOnlyAtTheRoot) {
  RunRanks(GetParam(), [](Rank& me) {
    const int root = 1 % me.nranks;
    std::vector<std::vector<int32_t>> all;
    for (int r = 0; r < me.nranks; ++r) all.push_back(Input<int32_t>(r, 256, ncclMax));
    int32_t* send = ToDevice(all[me.rank], me.stream);
    int32_t* recv = ToDevice(std::vector<int32_t>(256, 99), me.stream);
    int32_t* root_recv = me.rank == root ? recv : nullptr;  // may be NULL elsewhere
    ASSERT_EQ(ncclReduce(send, root_recv, 256, ncclInt32, ncclMax, root, me.comm, me.stream),
              ncclSuccess);
    ASSERT_EQ(ncclReduce(send, send, 256, ncclInt32, ncclMax, root, me.comm, me.stream),
              ncclSuccess);
    const std::vector<int32_t> expected = Expected(all, ncclMax);
    EXPECT_EQ(ToHost(recv, 256, me.stream),
              me.rank == root ? expected : std::vector<int32_t>(256, 99));
    EXPECT_EQ(ToHost(send, 256, me.stream), me.rank == root ? expected : all[me.rank]);
    EXPECT_EQ(cudaFree(send), cudaSuccess);
    EXPECT_EQ(cudaFree(recv), cudaSuccess);
  });
}

TEST_P(FakeNcclCollectives, AllGatherInRankOrderAlsoInPlace) {
  const size_t n = 100;
  RunRanks(GetParam(), [&](Rank& me) {
    std::vector<uint8_t> expected(n * me.nranks), mine(n);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<uint8_t>(i * 7 / n + i);
    std::copy_n(expected.begin() + me.rank * n, n, mine.begin());
    uint8_t* send = ToDevice(mine, me.stream);
    uint8_t* recv = ToDevice(std::vector<uint8_t>(n * me.nranks, 0), me.stream);
    ASSERT_EQ(ncclAllGather(send, recv, n, ncclUint8, me.comm, me.stream), ncclSuccess);
    EXPECT_EQ(ToHost(recv, n * me.nranks, me.stream), expected);
    std::vector<uint8_t> only_mine(n * me.nranks, 0);
    std::copy_n(mine.begin(), n, only_mine.begin() + me.rank * n);
    uint8_t* in_place = ToDevice(only_mine, me.stream);
    ASSERT_EQ(ncclAllGather(in_place + me.rank * n, in_place, n, ncclUint8, me.comm, me.stream),
              ncclSuccess);
    EXPECT_EQ(ToHost(in_place, n * me.nranks, me.stream), expected);
    for (uint8_t* p : {send, recv, in_place}) EXPECT_EQ(cudaFree(p), cudaSuccess);
  });
}

struct Fill {
  float* data;
  float value;
};

// The data is written by a late host function on the op's stream: the op
// must run after it, not when the host called it.
TEST_P(FakeNcclCollectives, WaitsForEarlierWorkOnItsStream) {
  RunRanks(GetParam(), [](Rank& me) {
    float* data = ToDevice(std::vector<float>(1024, 0.0f), me.stream);
    Fill fill{data, me.rank + 1.0f};
    auto pause = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(150)); };
    auto write = [](void* p) {
      auto* f = static_cast<Fill*>(p);
      std::fill_n(f->data, 1024, f->value);
    };
    ASSERT_EQ(cudaLaunchHostFunc(me.stream, pause, nullptr), cudaSuccess);
    ASSERT_EQ(cudaLaunchHostFunc(me.stream, write, &fill), cudaSuccess);
    ASSERT_EQ(ncclAllReduce(data, data, 1024, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclSuccess);
    EXPECT_EQ(cudaStreamQuery(me.stream), cudaErrorNotReady);  // returned before the data moved
    const float sum = me.nranks * (me.nranks + 1) / 2.0f;
    EXPECT_EQ(ToHost(data, 1024, me.stream), std::vector<float>(1024, sum));
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

TEST_P(FakeNcclCollectives, OnTheDefaultStream) {
  RunRanks(GetParam(), [](Rank& me) {
    int64_t* data = ToDevice(std::vector<int64_t>(10, me.rank), nullptr);
    ASSERT_EQ(ncclAllReduce(data, data, 10, ncclInt64, ncclSum, me.comm, nullptr), ncclSuccess);
    const int64_t sum = int64_t{me.nranks} * (me.nranks - 1) / 2;
    EXPECT_EQ(ToHost(data, 10, nullptr), std::vector<int64_t>(10, sum));
    EXPECT_EQ(cudaFree(data), cudaSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(Np, FakeNcclCollectives, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace fake_nccl_test
