// The registry's GPU half in an NCCL build: the CUDA backend.
#include "flock/transport/cuda/cuda_backend.h"
#include "flock/transport/registry.h"

namespace flock {

bool NcclBuilt() {
  return true;
}

Result<std::unique_ptr<GpuBackend>> CreateGpuBackend(Transport& host, const Config& config,
                                                     int host_local_rank) {
  return CudaBackend::Create(host, config.device, host_local_rank, config.gpu_via_mpi,
                             config.fusion_threshold_bytes);
}

}  // namespace flock
