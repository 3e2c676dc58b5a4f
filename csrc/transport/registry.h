// Backend registry: the one place that knows which transports this build has.
#pragma once

#include <memory>

#include "flock/common/config.h"
#include "flock/transport/transport.h"

namespace flock {

// The transport for host (CPU) tensors: MPI.
Result<std::unique_ptr<Transport>> CreateHostTransport(const Config& config);

// Whether this build carries the NCCL backend for CUDA tensors.
bool NcclBuilt();

// Ends the communication libraries at process exit (only what flock started).
void FinalizeTransports();

}  // namespace flock
