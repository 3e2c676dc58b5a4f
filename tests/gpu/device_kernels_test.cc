// flock's CUDA kernels (transport/cuda/device_kernels.cu), run on the fake
// device — the same source compiled as C++, each body queued on its stream —
// against the CPU kernels for every dtype and reduction: the results must be
// the same bytes, since both use common/element_ops.h. A delayed stream
// (FAKE_CUDA_DELAY_US) shows that a kernel runs in stream order.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "flock/common/reduce_kernels.h"
#include "flock/common/weighted_kernels.h"
#include "flock/transport/cuda/device_kernels.h"

namespace flock {
namespace {

constexpr DataType kAllTypes[] = {DataType::kBool,    DataType::kUInt8,    DataType::kInt8,
                                  DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
                                  DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64};
constexpr DataType kFloating[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kProduct};
constexpr int64_t kCount = 1000;

// Random valid values of `dtype`: small integers, 0/1 for bool, and numbers in
// [-4, 4) for the floating types (float16/bfloat16 rounded by the CPU's store).
std::vector<char> RandomValues(DataType dtype, int64_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<char> bytes(static_cast<size_t>(count) * DataTypeSize(dtype));
  const size_t width = DataTypeSize(dtype);
  if (!IsFloatingPoint(dtype)) {  // small values: a product of two never overflows
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = static_cast<int64_t>(gen() % (dtype == DataType::kBool ? 2 : 7));
      std::memcpy(bytes.data() + i * width, &v, width);  // the low bytes (little-endian)
    }
    return bytes;
  }
  std::uniform_real_distribution<double> number(-4, 4);
  if (dtype == DataType::kFloat64) {
    for (int64_t i = 0; i < count; ++i) {
      const double v = number(gen);
      std::memcpy(bytes.data() + 8 * i, &v, 8);
    }
    return bytes;
  }
  std::vector<float> wide(static_cast<size_t>(count));
  for (float& v : wide) v = static_cast<float>(number(gen));
  EXPECT_TRUE(StoreAccumulator(bytes.data(), wide.data(), dtype, count).ok());
  return bytes;
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&data_, bytes), cudaSuccess); }
  ~DeviceBuffer() { (void)cudaFree(data_); }
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

class DeviceKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override { EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess); }

  DeviceBuffer Upload(const std::vector<char>& host) {
    DeviceBuffer buffer(host.size());
    EXPECT_EQ(
        cudaMemcpyAsync(buffer.get(), host.data(), host.size(), cudaMemcpyHostToDevice, stream_),
        cudaSuccess);
    return buffer;
  }
  std::vector<char> Download(const DeviceBuffer& buffer, size_t bytes) {
    std::vector<char> host(bytes);
    EXPECT_EQ(cudaMemcpyAsync(host.data(), buffer.get(), bytes, cudaMemcpyDeviceToHost, stream_),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return host;
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(DeviceKernels, ReduceIntoMatchesTheCpuForEveryDtypeAndOp) {
  for (DataType dtype : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      SCOPED_TRACE(std::string(DataTypeName(dtype)) + " " + ReduceOpName(op));
      std::vector<char> a = RandomValues(dtype, kCount, 1), b = RandomValues(dtype, kCount, 2);
      DeviceBuffer da = Upload(a), db = Upload(b);
      const Status on_gpu = gpu::ReduceInto(stream_, da.get(), db.get(), kCount, dtype, op);
      const Status on_cpu = ReduceInto(a.data(), b.data(), kCount, dtype, op);
      ASSERT_EQ(on_gpu.code(), on_cpu.code()) << on_gpu.ToString();
      if (!on_cpu.ok()) continue;  // average of an integer type: refused by both
      EXPECT_EQ(Download(da, a.size()), a);
    }
  }
}

TEST_F(DeviceKernels, ScaleMatchesTheCpuAndRefusesIntegers) {
  for (DataType dtype : kAllTypes) {
    SCOPED_TRACE(DataTypeName(dtype));
    std::vector<char> a = RandomValues(dtype, kCount, 3);
    DeviceBuffer da = Upload(a);
    const Status on_gpu = gpu::ScaleInPlace(stream_, da.get(), kCount, dtype, 1.0 / 3);
    const Status on_cpu = ScaleInPlace(a.data(), kCount, dtype, 1.0 / 3);
    ASSERT_EQ(on_gpu.code(), on_cpu.code());
    if (!IsFloatingPoint(dtype)) {
      EXPECT_EQ(on_gpu.code(), StatusCode::kUnsupported);
      EXPECT_NE(on_gpu.message().find("floating-point"), std::string::npos);
      continue;
    }
    EXPECT_EQ(Download(da, a.size()), a);
  }
}

// out = 0.5 x0 + 0.25 x1 + 0.25 x2 through the accumulator, as the neighbor ops build it.
TEST_F(DeviceKernels, WeightedAverageMatchesTheCpu) {
  for (DataType dtype : kFloating) {
    SCOPED_TRACE(DataTypeName(dtype));
    const size_t acc_bytes = static_cast<size_t>(kCount) * DataTypeSize(AccumulatorType(dtype));
    std::vector<char> x0 = RandomValues(dtype, kCount, 4), x1 = RandomValues(dtype, kCount, 5),
                      x2 = RandomValues(dtype, kCount, 6);
    DeviceBuffer d0 = Upload(x0), d1 = Upload(x1), d2 = Upload(x2), dacc(acc_bytes),
                 dout(x0.size());
    ASSERT_TRUE(gpu::WeightedStore(stream_, dacc.get(), d0.get(), dtype, 0.5, kCount).ok());
    ASSERT_TRUE(gpu::WeightedAccumulate(stream_, dacc.get(), d1.get(), dtype, 0.25, kCount).ok());
    ASSERT_TRUE(gpu::WeightedAccumulate(stream_, dacc.get(), d2.get(), dtype, 0.25, kCount).ok());
    ASSERT_TRUE(gpu::StoreAccumulator(stream_, dout.get(), dacc.get(), dtype, kCount).ok());

    std::vector<char> acc(acc_bytes), out(x0.size());
    ASSERT_TRUE(WeightedStore(acc.data(), x0.data(), dtype, 0.5, kCount).ok());
    ASSERT_TRUE(WeightedAccumulate(acc.data(), x1.data(), dtype, 0.25, kCount).ok());
    ASSERT_TRUE(WeightedAccumulate(acc.data(), x2.data(), dtype, 0.25, kCount).ok());
    ASSERT_TRUE(StoreAccumulator(out.data(), acc.data(), dtype, kCount).ok());
    EXPECT_EQ(Download(dout, out.size()), out);
  }
}

TEST_F(DeviceKernels, WeightedKernelsRefuseIntegers) {
  DeviceBuffer a(64), b(64);
  const Status status = gpu::WeightedStore(stream_, a.get(), b.get(), DataType::kInt32, 1, 4);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("weighted store"), std::string::npos);
}

TEST_F(DeviceKernels, EmptyInputsQueueNothing) {
  EXPECT_TRUE(gpu::ScaleInPlace(stream_, nullptr, 0, DataType::kFloat32, 2).ok());
  EXPECT_TRUE(gpu::ReduceInto(stream_, nullptr, nullptr, 0, DataType::kInt8, ReduceOp::kMax).ok());
}

}  // namespace
}  // namespace flock
