// TensorView: what the core knows of a tensor — a pointer, an element type, a
// shape and a device. It owns nothing; whoever made it keeps the memory alive.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flock/common/data_type.h"

namespace flock {

enum class DeviceType : uint8_t { kCPU = 0, kCUDA = 1 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
};

struct TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;  // empty: a 0-d tensor holding one element
  Device device;

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t size_bytes() const { return num_elements() * static_cast<int64_t>(DataTypeSize(dtype)); }
};

std::string ShapeToString(const std::vector<int64_t>& shape);  // "[2, 3]"

// The byte size of a `dtype` tensor with dims[0..ndim), for shapes read from
// another process: nullopt when a dim is negative or the size overflows int64.
std::optional<int64_t> CheckedSizeBytes(DataType dtype, const int64_t* dims, size_t ndim);
std::string DeviceToString(const Device& device);  // "cpu", "cuda:1"

}  // namespace flock
