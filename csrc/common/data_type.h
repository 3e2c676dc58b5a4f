// DataType: the element types flock communicates and reduces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace flock {

enum class DataType : uint8_t {
  kBool = 0,
  kUInt8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

constexpr int kNumDataTypes = 10;

size_t DataTypeSize(DataType dtype);
const char* DataTypeName(DataType dtype);  // numpy/torch style: "float32", "bfloat16", ...
std::optional<DataType> ParseDataType(const std::string& name);
bool IsFloatingPoint(DataType dtype);

}  // namespace flock
