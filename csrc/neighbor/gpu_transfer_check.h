// The check a neighbor op on CUDA tensors makes before its first NCCL call
// (neighbor/gpu_steps.h): one allgather, over the host transport, of every
// rank's transfers (step, sender, receiver, elements) and of whether the rank
// is ready (its device buffers allocated). NCCL would wait forever for a send
// without its receive, or for a rank that gave up; this way every rank fails
// the op with the same message instead. The op is negotiated, so every rank
// reaches the check at the same point.
#pragma once

#include <string>
#include <vector>

#include "flock/common/status.h"
#include "flock/requests/exchange_step.h"
#include "flock/transport/transport.h"

namespace flock {

// OK when every rank is ready and every send has its receive (same step and
// element count; a gather step: the same row size); else the first problem,
// the same on every rank (a rank that is not ready gets its own `ready`
// status back). `gather_counts`: the elements each receive of a gather step
// brings, in the steps' receive order.
Status CheckTransfersAgree(Transport& host, const std::string& name,
                           const std::vector<ExchangeStep>& steps, const Status& ready,
                           std::vector<int64_t>* gather_counts = nullptr);

}  // namespace flock
