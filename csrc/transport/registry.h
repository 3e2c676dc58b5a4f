// Backend registry: the one place that knows which transports this build has.
#pragma once

#include <memory>

#include "flock/common/config.h"
#include "flock/transport/gpu_backend.h"
#include "flock/transport/transport.h"

namespace flock {

// The transport for host (CPU) tensors: MPI.
Result<std::unique_ptr<Transport>> CreateHostTransport(const Config& config);

// Whether this build carries the NCCL backend for CUDA tensors.
bool NcclBuilt();

// The GPU backend (CUDA + NCCL), made at the first CUDA tensor; in a build
// without it, an Unsupported error that says so. `host` carries NCCL's ids;
// `host_local_rank` is this rank's index among the ranks of its host.
Result<std::unique_ptr<GpuBackend>> CreateGpuBackend(Transport& host, const Config& config,
                                                     int host_local_rank);

// Ends the communication libraries at process exit (only what flock started).
void FinalizeTransports();

}  // namespace flock
