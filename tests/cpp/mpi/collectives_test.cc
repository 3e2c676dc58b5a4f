// Global collectives under MPI, through the engine (runtime/collectives.h):
// results against a reference each rank computes from every rank's
// (deterministic) input, and mismatches reported on every rank without
// hanging, after which the next op still works.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flock/common/half.h"
#include "flock/runtime/collectives.h"
#include "tests_runtime.h"

namespace flock::testing {
namespace {

// Rank r's value at index i: small integers so every dtype and op is exact
// (products use 1 and 2 only, so int8 holds them up to six ranks).
double InputValue(ReduceOp op, int r, int64_t i) {
  if (op == ReduceOp::kProduct) return static_cast<double>((r + i) % 2 + 1);
  return static_cast<double>((r * 7 + i * 3) % 5 + 1);
}

template <typename T>
T FromDouble(double v) {
  return static_cast<T>(v);
}
template <>
Float16 FromDouble<Float16>(double v) {
  return ToFloat16(static_cast<float>(v));
}
template <>
BFloat16 FromDouble<BFloat16>(double v) {
  return ToBFloat16(static_cast<float>(v));
}
double ToDouble(double v) {
  return v;
}
double ToDouble(float v) {
  return v;
}
double ToDouble(Float16 v) {
  return ToFloat(v);
}
double ToDouble(BFloat16 v) {
  return ToFloat(v);
}
template <typename T>
double ToDouble(T v) {
  return static_cast<double>(v);
}

double Reference(ReduceOp op, int n, int64_t i) {
  double acc = InputValue(op, 0, i);
  for (int r = 1; r < n; ++r) {
    const double v = InputValue(op, r, i);
    if (op == ReduceOp::kSum || op == ReduceOp::kAverage) acc += v;
    if (op == ReduceOp::kMin) acc = std::min(acc, v);
    if (op == ReduceOp::kMax) acc = std::max(acc, v);
    if (op == ReduceOp::kProduct) acc *= v;
  }
  return op == ReduceOp::kAverage ? acc / n : acc;
}

template <typename T>
void CheckAllreduce(DataType dtype, ReduceOp op) {
  Runtime& t = *SharedRuntime();
  const int n = t.size(), r = t.rank();
  const int64_t count = 1001;
  std::vector<T> in(count), out(count);
  for (int64_t i = 0; i < count; ++i) in[i] = FromDouble<T>(InputValue(op, r, i));
  TensorView input{in.data(), dtype, {count}};
  TensorView output{out.data(), dtype, {count}};
  AllreduceOptions options{op, CommGroup::kWorld, std::string("t.") + DataTypeName(dtype)};
  Status status = Allreduce(t, input, output, options);
  if (op == ReduceOp::kAverage && !IsFloatingPoint(dtype)) {
    EXPECT_EQ(status.code(), StatusCode::kUnsupported) << status.ToString();
    return;
  }
  ASSERT_TRUE(status.ok()) << status.ToString();
  // Exact except the average's division, which rounds once more in half types.
  const bool half = DataTypeSize(dtype) == 2;
  const double tolerance = op == ReduceOp::kAverage ? (half ? 1e-2 : 1e-6) : 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double expected = Reference(op, n, i);
    ASSERT_NEAR(ToDouble(out[i]), expected, tolerance * expected)
        << DataTypeName(dtype) << " " << ReduceOpName(op) << " at " << i;
  }
}

TEST(Collectives, AllreduceEveryDtypeAndOp) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kProduct};
  for (ReduceOp op : ops) {
    CheckAllreduce<int8_t>(DataType::kInt8, op);
    CheckAllreduce<int16_t>(DataType::kInt16, op);
    CheckAllreduce<uint8_t>(DataType::kUInt8, op);
    CheckAllreduce<int32_t>(DataType::kInt32, op);
    CheckAllreduce<int64_t>(DataType::kInt64, op);
    CheckAllreduce<Float16>(DataType::kFloat16, op);
    CheckAllreduce<BFloat16>(DataType::kBFloat16, op);
    CheckAllreduce<float>(DataType::kFloat32, op);
    CheckAllreduce<double>(DataType::kFloat64, op);
  }
}

TEST(Collectives, DtypeMismatchFailsOnEveryRankThenNextOpWorks) {
  Runtime& t = *SharedRuntime();
  const int n = t.size(), r = t.rank();
  if (n == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<double> buf(4, 1.0);
  // The last rank claims the same bytes are float32 (8 elements): a mismatch.
  TensorView view = r == n - 1 ? TensorView{buf.data(), DataType::kFloat32, {8}}
                               : TensorView{buf.data(), DataType::kFloat64, {4}};
  Status status = Allreduce(t, view, view, {ReduceOp::kSum, CommGroup::kWorld, "grad"});
  ASSERT_EQ(status.code(), StatusCode::kMismatch);
  EXPECT_NE(status.message().find("'grad'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("dtype"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("rank " + std::to_string(n - 1)), std::string::npos)
      << status.message();
  TensorView good{buf.data(), DataType::kFloat64, {4}};
  ASSERT_TRUE(Allreduce(t, good, good, {ReduceOp::kSum, CommGroup::kWorld, "next"}).ok());
  EXPECT_EQ(buf[0], static_cast<double>(n));
}

TEST(Collectives, LocalRejectionCancelsOnEveryRank) {
  Runtime& t = *SharedRuntime();
  const int r = t.rank();
  double x = 1.0;
  TensorView view{&x, DataType::kFloat64, {}};
  Status local = r == 0 ? Status::Unsupported("bad tensor") : Status::OK();
  Status status = Allreduce(t, view, view, {ReduceOp::kSum, CommGroup::kWorld, "x"}, local);
  EXPECT_FALSE(status.ok());
  if (r == 0) {
    EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  } else {
    EXPECT_EQ(status.code(), StatusCode::kAborted);
    EXPECT_NE(status.message().find("rank 0"), std::string::npos) << status.message();
  }
}

TEST(Collectives, BroadcastRootMismatchAndOutOfRange) {
  Runtime& t = *SharedRuntime();
  const int n = t.size(), r = t.rank();
  int64_t x = r;
  TensorView view{&x, DataType::kInt64, {1}};
  Status bad = Broadcast(t, view, {n, CommGroup::kWorld, "b"});
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.ToString();
  if (n > 1) {
    Status mismatch = Broadcast(t, view, {r == 0 ? 1 : 0, CommGroup::kWorld, "b"});
    EXPECT_EQ(mismatch.code(), StatusCode::kMismatch) << mismatch.ToString();
  }
  ASSERT_TRUE(Broadcast(t, view, {n - 1, CommGroup::kWorld, "b"}).ok());
  EXPECT_EQ(x, n - 1);
}

TEST(Collectives, AllgatherVariableFirstDim) {
  Runtime& t = *SharedRuntime();
  const int n = t.size(), r = t.rank();
  // Rank r contributes r rows of 3 int32 values equal to r.
  std::vector<int32_t> mine(static_cast<size_t>(3 * r) + 1, r);
  TensorView input{mine.data(), DataType::kInt32, {r, 3}};
  std::vector<int32_t> out;
  std::vector<int64_t> out_shape;
  OutputAllocator allocate = [&](const std::vector<int64_t>& shape) -> Result<TensorView> {
    out_shape = shape;
    out.assign(static_cast<size_t>(shape[0] * shape[1]) + 1, -1);
    return TensorView{out.data(), DataType::kInt32, shape};
  };
  ASSERT_TRUE(Allgather(t, input, allocate, {CommGroup::kWorld, "g"}).ok());
  ASSERT_EQ(out_shape, (std::vector<int64_t>{n * (n - 1) / 2, 3}));
  size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 3 * i; ++k) ASSERT_EQ(out[pos++], i);
  }
}

TEST(Collectives, AllgatherTrailingShapeMismatch) {
  Runtime& t = *SharedRuntime();
  const int n = t.size(), r = t.rank();
  if (n == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> mine(8, 0.f);
  TensorView input{mine.data(), DataType::kFloat32, {2, r == 1 ? 4 : 2}};
  OutputAllocator allocate = [&](const std::vector<int64_t>&) -> Result<TensorView> {
    return Status::Internal("must not allocate on a mismatch");
  };
  Status status = Allgather(t, input, allocate, {CommGroup::kWorld, "g"});
  EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.ToString();
  EXPECT_NE(status.message().find("shape"), std::string::npos);
}

}  // namespace
}  // namespace flock::testing
