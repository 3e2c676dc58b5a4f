// The registry's GPU half in a build without CUDA and NCCL (FLOCK_WITH_NCCL
// OFF, or AUTO where they were not found): CUDA tensors are refused.
#include "flock/transport/registry.h"

namespace flock {

bool NcclBuilt() {
  return false;
}

Result<std::unique_ptr<GpuBackend>> CreateGpuBackend(Transport&, const Config&, int) {
  return Status::Unsupported(
      "this flock build has no GPU backend (built without CUDA and NCCL: FLOCK_WITH_NCCL=OFF, "
      "or AUTO where they were not found); move the tensor to the CPU with .cpu(), or reinstall "
      "with FLOCK_WITH_NCCL=ON");
}

}  // namespace flock
