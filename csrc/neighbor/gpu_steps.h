// A neighbor op's exchange steps on CUDA tensors (neighbor_allreduce, pair
// gossip, dynamic weights, hierarchical_neighbor_allreduce): the same
// ExchangeStep plans as the host path, run over the GPU backend.
//
// These ops are negotiated like global ops (NCCL matches transfers by call
// order), so every rank runs them at the same point, and first checks with
// the others that every send has its receive (neighbor/gpu_transfer_check.h).
// Each step is one NCCL group of receives (into device
// scratch, or straight into place) and sends; the sender applies its scale
// (dst weight) before sending; the weighted sum is built on flock's stream
// with the shared kernels.
#pragma once

#include "flock/common/status.h"
#include "flock/requests/pending_request.h"
#include "flock/transport/gpu_backend.h"
#include "flock/transport/transport.h"

namespace flock {

// `gathered`: neighbor_allgather's output (device memory flock allocated).
Status RunStepsOnGpu(GpuBackend& gpu, Transport& host, const PendingRequest& request,
                     std::shared_ptr<GatheredTensor>* gathered);

}  // namespace flock
