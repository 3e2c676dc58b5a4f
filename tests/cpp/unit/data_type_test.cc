#include "flock/common/data_type.h"

#include <gtest/gtest.h>

#include "flock/common/tensor_view.h"

namespace flock {
namespace {

TEST(DataType, SizesNamesAndRoundTrip) {
  const std::pair<DataType, size_t> sizes[] = {{DataType::kBool, 1},    {DataType::kUInt8, 1},
                                               {DataType::kInt8, 1},    {DataType::kInt16, 2},
                                               {DataType::kInt32, 4},   {DataType::kInt64, 8},
                                               {DataType::kFloat16, 2}, {DataType::kBFloat16, 2},
                                               {DataType::kFloat32, 4}, {DataType::kFloat64, 8}};
  for (const auto& [dtype, size] : sizes) {
    EXPECT_EQ(DataTypeSize(dtype), size) << DataTypeName(dtype);
    EXPECT_EQ(ParseDataType(DataTypeName(dtype)), dtype);
  }
  EXPECT_FALSE(ParseDataType("uint16").has_value());
  EXPECT_FALSE(ParseDataType("").has_value());
}

TEST(DataType, FloatingPointClassification) {
  EXPECT_TRUE(IsFloatingPoint(DataType::kFloat16));
  EXPECT_TRUE(IsFloatingPoint(DataType::kBFloat16));
  EXPECT_TRUE(IsFloatingPoint(DataType::kFloat64));
  EXPECT_FALSE(IsFloatingPoint(DataType::kInt64));
  EXPECT_FALSE(IsFloatingPoint(DataType::kBool));
}

TEST(TensorView, ElementsBytesAndPrinting) {
  TensorView scalar{nullptr, DataType::kFloat64, {}};
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_EQ(scalar.size_bytes(), 8);
  TensorView empty{nullptr, DataType::kFloat32, {3, 0, 2}};
  EXPECT_EQ(empty.num_elements(), 0);
  TensorView matrix{nullptr, DataType::kBFloat16, {2, 3}};
  EXPECT_EQ(matrix.size_bytes(), 12);
  EXPECT_EQ(ShapeToString(matrix.shape), "[2, 3]");
  EXPECT_EQ(DeviceToString(Device{DeviceType::kCUDA, 1}), "cuda:1");
}

}  // namespace
}  // namespace flock
