// The registry's GPU half in an NCCL build: the CUDA backend.
#include "flock/transport/cuda/cuda_backend.h"
#include "flock/transport/registry.h"

namespace flock {

bool NcclBuilt() {
  return true;
}

Result<std::unique_ptr<GpuBackend>> CreateGpuBackend(Transport& host, const Config& config,
                                                     int local_rank) {
  return CudaBackend::Create(host, config.device, local_rank);
}

}  // namespace flock
