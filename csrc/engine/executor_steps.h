// The executor's data movement, shared by its files: timeline phases, the
// scaling of an average, device outputs, and the ops other than allreduce
// (scatter_steps.cc). Written against DataPath, so the CUDA path runs them too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flock/common/timeline.h"
#include "flock/requests/pending_request.h"
#include "flock/transport/data_path.h"
#include "flock/transport/gpu_backend.h"

namespace flock {

// Runs fn between a timeline span of `phase` on every request's row.
template <typename Fn>
Status Phase(Timeline& timeline, const std::vector<PendingRequest*>& batch, const char* phase,
             Fn fn) {
  for (PendingRequest* r : batch) timeline.Begin(r->op.name, phase);
  Status status = fn();
  for (PendingRequest* r : batch) timeline.End(r->op.name);
  return status;
}

// Divides `count` elements at `data` by the group size if `r` averages.
Status ScaleIfAverage(DataPath& path, const PendingRequest& r, void* data, int64_t count);

// Device memory this rank may or may not have got (`mine`): every rank of r's
// group learns over `host` whether every rank has it before any NCCL call, so
// an allocation that fails on one rank fails the op everywhere instead of
// leaving the others in NCCL. `what` names the memory in the error.
Status AgreeEveryRankHas(Transport& host, const PendingRequest& r, const Status& mine,
                         const std::string& what);

// An engine-made output of `bytes`: on the device from `gpu` (agreed as above),
// or in host memory when `gpu` is null.
Status AllocateOutput(GpuBackend* gpu, Transport& host, const PendingRequest& r,
                      GatheredTensor& out, int64_t bytes);

// Reduces every request of `batch` (same dtype, reduction and group) and
// writes block `rank` of each into its output: one transport call for all.
// `host`: the host transport when `path` is a device's (null on the host path).
Status Reducescatter(DataPath& path, Transport* host, Timeline& timeline,
                     const std::vector<PendingRequest*>& batch);

// Exchanges r's rows as its splits say; the splits travel over `host` first.
// `gpu`: the backend that allocates a CUDA tensor's output (null for host tensors).
Result<std::shared_ptr<GatheredTensor>> Alltoall(DataPath& path, Transport& host, GpuBackend* gpu,
                                                 Timeline& timeline, PendingRequest& r);

}  // namespace flock
