#include "flock/common/tensor_view.h"

namespace flock {

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::optional<int64_t> CheckedSizeBytes(DataType dtype, const int64_t* dims, size_t ndim) {
  int64_t bytes = static_cast<int64_t>(DataTypeSize(dtype));
  for (size_t d = 0; d < ndim; ++d) {
    if (dims[d] < 0 || __builtin_mul_overflow(bytes, dims[d], &bytes)) return std::nullopt;
  }
  return bytes;
}

std::string DeviceToString(const Device& device) {
  if (device.type == DeviceType::kCPU) return "cpu";
  return "cuda:" + std::to_string(device.index);
}

}  // namespace flock
