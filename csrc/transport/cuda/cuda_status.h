// CUDA errors as flock Statuses: every CUDA call's result is checked and
// reported with what flock was doing, never exit()ed on (Bluefog issue #108).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "flock/common/status.h"

namespace flock::gpu {

// OK, or a TransportError "<what>: <CUDA's message> (<error name>)". A missing
// or too old driver says so and what to do.
Status CudaStatus(cudaError_t error, const std::string& what);

}  // namespace flock::gpu

#define FLOCK_CUDA_RETURN_IF_ERROR(call, what) \
  FLOCK_RETURN_IF_ERROR(::flock::gpu::CudaStatus((call), (what)))
