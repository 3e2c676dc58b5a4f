// Every dtype x op of the kernels against plain scalar loops written here,
// and the scaled add against double-precision arithmetic.
#include "flock/common/reduce_kernels.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "flock/common/half.h"

namespace flock {
namespace {

constexpr ReduceOp kCombiningOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                                      ReduceOp::kProduct};

template <typename T>
T ScalarReference(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum: return static_cast<T>(a + b);
    case ReduceOp::kMin: return b < a ? b : a;
    case ReduceOp::kMax: return a < b ? b : a;
    case ReduceOp::kProduct: return static_cast<T>(a * b);
    default: return a;
  }
}

template <typename T>
void CheckNative(DataType dtype) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-9, 9);
  // Odd length exercises the vector loop's remainder.
  for (ReduceOp op : kCombiningOps) {
    std::vector<T> a(1037), b(1037);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<T>(small(rng) + (std::is_unsigned_v<T> ? 9 : 0));
      b[i] = static_cast<T>(small(rng) + (std::is_unsigned_v<T> ? 9 : 0));
    }
    std::vector<T> expected(a.size());
    for (size_t i = 0; i < a.size(); ++i) expected[i] = ScalarReference(op, a[i], b[i]);
    ASSERT_TRUE(ReduceInto(a.data(), b.data(), static_cast<int64_t>(a.size()), dtype, op).ok());
    ASSERT_EQ(a, expected) << DataTypeName(dtype) << " " << ReduceOpName(op);
  }
}

TEST(ReduceKernels, NativeTypesMatchScalarLoops) {
  CheckNative<uint8_t>(DataType::kUInt8);
  CheckNative<int8_t>(DataType::kInt8);
  CheckNative<int16_t>(DataType::kInt16);
  CheckNative<int32_t>(DataType::kInt32);
  CheckNative<int64_t>(DataType::kInt64);
  CheckNative<float>(DataType::kFloat32);
  CheckNative<double>(DataType::kFloat64);
}

template <typename H>
void CheckHalf(DataType dtype, H (*narrow)(float)) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> values(-4.f, 4.f);
  for (ReduceOp op : kCombiningOps) {
    std::vector<H> a(515), b(515), expected(515);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = narrow(values(rng));
      b[i] = narrow(values(rng));
      // Reference: combine the exact widened values in double, round once.
      const double x = ToFloat(a[i]), y = ToFloat(b[i]);
      expected[i] = narrow(static_cast<float>(ScalarReference<double>(op, x, y)));
    }
    ASSERT_TRUE(ReduceInto(a.data(), b.data(), 515, dtype, op).ok());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].bits, expected[i].bits) << DataTypeName(dtype) << " " << ReduceOpName(op) << i;
    }
  }
}

TEST(ReduceKernels, HalfTypesComputeInFloatAndRoundOnce) {
  CheckHalf<Float16>(DataType::kFloat16, &ToFloat16);
  CheckHalf<BFloat16>(DataType::kBFloat16, &ToBFloat16);
}

TEST(ReduceKernels, BoolIsLogical) {
  std::vector<uint8_t> a = {0, 0, 1, 1}, b = {0, 1, 0, 1};
  std::vector<uint8_t> x = a;
  ASSERT_TRUE(ReduceInto(x.data(), b.data(), 4, DataType::kBool, ReduceOp::kSum).ok());
  EXPECT_EQ(x, (std::vector<uint8_t>{0, 1, 1, 1}));
  x = a;
  ASSERT_TRUE(ReduceInto(x.data(), b.data(), 4, DataType::kBool, ReduceOp::kMax).ok());
  EXPECT_EQ(x, (std::vector<uint8_t>{0, 1, 1, 1}));
  x = a;
  ASSERT_TRUE(ReduceInto(x.data(), b.data(), 4, DataType::kBool, ReduceOp::kMin).ok());
  EXPECT_EQ(x, (std::vector<uint8_t>{0, 0, 0, 1}));
  x = a;
  ASSERT_TRUE(ReduceInto(x.data(), b.data(), 4, DataType::kBool, ReduceOp::kProduct).ok());
  EXPECT_EQ(x, (std::vector<uint8_t>{0, 0, 0, 1}));
}

TEST(ReduceKernels, AverageNeedsFloatingPoint) {
  int32_t a = 1, b = 2;
  Status status = ReduceInto(&a, &b, 1, DataType::kInt32, ReduceOp::kAverage);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("int32"), std::string::npos);
  EXPECT_TRUE(CheckReduceSupported(DataType::kBFloat16, ReduceOp::kAverage).ok());
  EXPECT_FALSE(CheckReduceSupported(DataType::kBool, ReduceOp::kAverage).ok());
}

TEST(ReduceKernels, ScaledAddAndScale) {
  std::vector<double> x = {1, 2, 3}, y = {10, 20, 30}, out(3);
  ASSERT_TRUE(ScaledAdd(out.data(), 0.5, x.data(), 0.25, y.data(), 3, DataType::kFloat64).ok());
  EXPECT_EQ(out, (std::vector<double>{3.0, 6.0, 9.0}));
  // Output aliasing an input is allowed (out = a*out + b*y).
  ASSERT_TRUE(ScaledAdd(x.data(), 2.0, x.data(), 1.0, y.data(), 3, DataType::kFloat64).ok());
  EXPECT_EQ(x, (std::vector<double>{12, 24, 36}));
  std::vector<float> f = {1.f, -2.f};
  ASSERT_TRUE(ScaleInPlace(f.data(), 2, DataType::kFloat32, 0.5).ok());
  EXPECT_EQ(f, (std::vector<float>{0.5f, -1.f}));
  // float16 accumulates in float: 2048 + 1 + 1 is exact in float, rounds once.
  std::vector<Float16> h = {ToFloat16(2048.f)}, one = {ToFloat16(1.f)};
  ASSERT_TRUE(ScaledAdd(h.data(), 1.0, h.data(), 2.0, one.data(), 1, DataType::kFloat16).ok());
  EXPECT_EQ(ToFloat(h[0]), 2050.f);
  int32_t i = 1;
  EXPECT_EQ(ScaleInPlace(&i, 1, DataType::kInt32, 2.0).code(), StatusCode::kUnsupported);
  EXPECT_EQ(ScaledAdd(&i, 1, &i, 1, &i, 1, DataType::kInt32).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace flock
