// The NCCL transport and the CUDA backend under mpiexec, on the fake device
// (one MPI job per world size): every NCCL op flock uses, for every dtype and
// reduction, against the CPU kernels applied in rank order (the fake NCCL
// reduces in that order, so the bytes must match exactly).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "flock/common/reduce_kernels.h"
#include "flock/common/weighted_kernels.h"
#include "flock/transport/nccl/nccl_transport.h"
#include "tests_runtime.h"

namespace flock {
namespace {

using testing::SharedRuntime;

constexpr DataType kNcclTypes[] = {DataType::kBool,     DataType::kUInt8,   DataType::kInt8,
                                   DataType::kInt32,    DataType::kInt64,   DataType::kFloat16,
                                   DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kProduct};

// Rank r's input: small integers every rank can recompute (0/1 for bool),
// exact in every dtype, products over 4 ranks included.
std::vector<char> InputOf(int rank, DataType dtype, int64_t count) {
  std::mt19937 gen(static_cast<unsigned>(17 + rank));
  const size_t width = DataTypeSize(dtype);
  std::vector<char> bytes(static_cast<size_t>(count) * width);
  std::vector<float> wide(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t v = dtype == DataType::kBool ? gen() % 2 : 1 + gen() % 3;
    wide[static_cast<size_t>(i)] = static_cast<float>(v);
    // Integers: the low bytes of v (this machine is little-endian).
    if (!IsFloatingPoint(dtype)) std::memcpy(bytes.data() + i * width, &v, width);
  }
  if (dtype == DataType::kFloat64) {
    for (int64_t i = 0; i < count; ++i) {
      const double d = wide[static_cast<size_t>(i)];
      std::memcpy(bytes.data() + i * width, &d, width);
    }
  } else if (IsFloatingPoint(dtype)) {
    EXPECT_TRUE(StoreAccumulator(bytes.data(), wide.data(), dtype, count).ok());
  }
  return bytes;
}

class Device {
 public:
  explicit Device(size_t bytes) { EXPECT_EQ(cudaMalloc(&data_, bytes), cudaSuccess); }
  ~Device() { (void)cudaFree(data_); }
  void* get() const { return data_; }
  void Put(const std::vector<char>& host) {
    ASSERT_EQ(cudaMemcpyAsync(data_, host.data(), host.size(), cudaMemcpyHostToDevice, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<char> Get(size_t bytes) const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // flock's stream too
    std::vector<char> host(bytes);
    EXPECT_EQ(cudaMemcpyAsync(host.data(), data_, bytes, cudaMemcpyDeviceToHost, nullptr),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return host;
  }

 private:
  void* data_ = nullptr;
};

class NcclMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpu = SharedRuntime()->Gpu();
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    gpu_ = gpu.value();
    // flock leaves the caller's current device alone: the test's buffers go on flock's.
    ASSERT_EQ(cudaSetDevice(gpu_->device()), cudaSuccess);
    rank_ = SharedRuntime()->rank();
    size_ = SharedRuntime()->size();
  }
  Transport& nccl() { return gpu_->transport(); }

  GpuBackend* gpu_ = nullptr;
  int rank_ = 0, size_ = 1;
};

TEST_F(NcclMpi, BackendUsesTheLocalRanksDevice) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(gpu_->device(), SharedRuntime()->machine().local_rank % count);
  EXPECT_TRUE(gpu_->CheckDevice(gpu_->device()).ok());
  EXPECT_EQ(gpu_->CheckDevice(gpu_->device() + 1).code(), StatusCode::kInvalidArgument);
}

TEST_F(NcclMpi, AllreduceMatchesTheCpuInRankOrderForEveryDtypeAndOp) {
  constexpr int64_t kCount = 257;
  for (DataType dtype : kNcclTypes) {
    for (ReduceOp op : kAllOps) {
      if (!CheckReduceSupported(dtype, op).ok()) continue;
      SCOPED_TRACE(std::string(DataTypeName(dtype)) + " " + ReduceOpName(op));
      std::vector<char> expected = InputOf(0, dtype, kCount);
      for (int r = 1; r < size_; ++r) {
        ASSERT_TRUE(
            ReduceInto(expected.data(), InputOf(r, dtype, kCount).data(), kCount, dtype, op).ok());
      }
      const std::vector<char> mine = InputOf(rank_, dtype, kCount);
      Device in(mine.size()), out(mine.size());
      in.Put(mine);
      ASSERT_TRUE(nccl().Allreduce(in.get(), out.get(), kCount, dtype, op, CommGroup::kWorld).ok());
      EXPECT_EQ(out.Get(mine.size()), expected);
      EXPECT_EQ(in.Get(mine.size()), mine);
    }
  }
}

TEST_F(NcclMpi, Int16IsRefusedWithAClearError) {
  Device buffer(64);
  const Status status = nccl().Allreduce(buffer.get(), buffer.get(), 4, DataType::kInt16,
                                         ReduceOp::kSum, CommGroup::kWorld);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("NCCL has no int16"), std::string::npos);
}

TEST_F(NcclMpi, BroadcastFromEveryRoot) {
  for (int root = 0; root < size_; ++root) {
    const std::vector<char> mine = InputOf(rank_ + 10 * root, DataType::kFloat32, 100);
    Device buffer(mine.size());
    buffer.Put(mine);
    ASSERT_TRUE(
        nccl()
            .Broadcast(buffer.get(), static_cast<int64_t>(mine.size()), root, CommGroup::kWorld)
            .ok());
    EXPECT_EQ(buffer.Get(mine.size()), InputOf(root + 10 * root, DataType::kFloat32, 100));
  }
}

TEST_F(NcclMpi, AllgatherAndAllgathervInRankOrder) {
  std::vector<int64_t> sizes;
  std::vector<char> expected, expected_v;
  for (int r = 0; r < size_; ++r) {
    const std::vector<char> part = InputOf(r, DataType::kInt32, 8);
    expected.insert(expected.end(), part.begin(), part.end());
    const std::vector<char> part_v = InputOf(r, DataType::kInt64, r + 1);
    expected_v.insert(expected_v.end(), part_v.begin(), part_v.end());
    sizes.push_back(static_cast<int64_t>(part_v.size()));
  }
  const std::vector<char> mine = InputOf(rank_, DataType::kInt32, 8);
  const std::vector<char> mine_v = InputOf(rank_, DataType::kInt64, rank_ + 1);
  Device in(mine.size()), out(expected.size()), in_v(mine_v.size()), out_v(expected_v.size());
  in.Put(mine);
  in_v.Put(mine_v);
  ASSERT_TRUE(
      nccl()
          .Allgather(in.get(), static_cast<int64_t>(mine.size()), out.get(), CommGroup::kWorld)
          .ok());
  ASSERT_TRUE(nccl().Allgatherv(in_v.get(), sizes, out_v.get(), CommGroup::kWorld).ok());
  EXPECT_EQ(out.Get(expected.size()), expected);
  EXPECT_EQ(out_v.Get(expected_v.size()), expected_v);
}

// A ring in one group, receives posted before sends: NCCL matches them anyway.
TEST_F(NcclMpi, GroupedSendAndReceiveAroundARing) {
  auto& transport = static_cast<NcclTransport&>(nccl());
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  const std::vector<char> mine = InputOf(rank_, DataType::kFloat64, 33);
  Device send(mine.size()), recv(mine.size());
  send.Put(mine);
  ASSERT_TRUE(transport.GroupStart().ok());
  ASSERT_TRUE(
      transport.Recv(recv.get(), static_cast<int64_t>(mine.size()), prev, 0, CommGroup::kWorld)
          .ok());
  ASSERT_TRUE(
      transport.Send(send.get(), static_cast<int64_t>(mine.size()), next, 0, CommGroup::kWorld)
          .ok());
  ASSERT_TRUE(transport.GroupEnd().ok());
  EXPECT_EQ(recv.Get(mine.size()), InputOf(prev, DataType::kFloat64, 33));
}

TEST_F(NcclMpi, NoAsynchronousErrorAfterAllThat) {
  EXPECT_TRUE(gpu_->CheckAsyncErrors().ok());
}

}  // namespace
}  // namespace flock
