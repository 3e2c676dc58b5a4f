#include "flock/transport/data_path.h"

#include <cstring>

#include "flock/common/reduce_kernels.h"

namespace flock {

Status HostDataPath::Copy(void* dst, const void* src, int64_t bytes) {
  if (bytes > 0 && dst != src) std::memcpy(dst, src, static_cast<size_t>(bytes));
  return Status::OK();
}

Status HostDataPath::Scale(void* buffer, int64_t count, DataType dtype, double factor) {
  return ScaleInPlace(buffer, count, dtype, factor);
}

Result<void*> HostDataPath::FusionBuffer(int64_t bytes) {
  if (static_cast<int64_t>(fusion_.size()) < bytes) fusion_.resize(static_cast<size_t>(bytes));
  return static_cast<void*>(fusion_.data());
}

}  // namespace flock
