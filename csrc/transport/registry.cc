#include "flock/transport/registry.h"

#include "flock/common/build_config.h"
#include "flock/transport/mpi/mpi_transport.h"

namespace flock {

Result<std::unique_ptr<Transport>> CreateHostTransport(const Config& config) {
  auto mpi = MpiTransport::Create(config.local_size_override, config.local_size_variable);
  if (!mpi.ok()) return mpi.status();
  return std::unique_ptr<Transport>(std::move(mpi).value());
}

bool NcclBuilt() {
  // The CUDA/NCCL toolchain is detected at configure time; the NCCL transport
  // itself has not landed yet, so CUDA tensors are refused in every build.
#if FLOCK_WITH_NCCL && FLOCK_HAVE_NCCL_TRANSPORT
  return true;
#else
  return false;
#endif
}

void FinalizeTransports() {
  MpiTransport::FinalizeIfOwned();
}

}  // namespace flock
