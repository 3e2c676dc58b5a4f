// DataPath: where an op's bytes live — host memory or a GPU's — and the moves
// the executor makes there besides communicating: copies into and out of the
// fusion buffer, and the scaling of an average. The op plans are written once
// against it; only the path underneath changes with the tensors' device.
#pragma once

#include <cstdint>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/status.h"
#include "flock/transport/transport.h"

namespace flock {

class DataPath {
 public:
  virtual ~DataPath() = default;
  virtual Transport& transport() = 0;
  virtual Status Copy(void* dst, const void* src, int64_t bytes) = 0;
  virtual Status Scale(void* buffer, int64_t count, DataType dtype, double factor) = 0;
  // Scratch memory of at least `bytes`, reused from call to call.
  virtual Result<void*> FusionBuffer(int64_t bytes) = 0;
};

// Host memory over the host transport (MPI): memcpy and the CPU kernels.
class HostDataPath : public DataPath {
 public:
  explicit HostDataPath(Transport& transport) : transport_(transport) {}
  Transport& transport() override { return transport_; }
  Status Copy(void* dst, const void* src, int64_t bytes) override;
  Status Scale(void* buffer, int64_t count, DataType dtype, double factor) override;
  Result<void*> FusionBuffer(int64_t bytes) override;

 private:
  Transport& transport_;
  std::vector<char> fusion_;
};

}  // namespace flock
