#include "flock/transport/registry.h"

#include "flock/transport/mpi/mpi_transport.h"

namespace flock {

Result<std::unique_ptr<Transport>> CreateHostTransport(const Config& config) {
  auto mpi = MpiTransport::Create(config.local_size_override, config.local_size_variable);
  if (!mpi.ok()) return mpi.status();
  return std::unique_ptr<Transport>(std::move(mpi).value());
}

void FinalizeTransports() {
  MpiTransport::FinalizeIfOwned();
}

}  // namespace flock
