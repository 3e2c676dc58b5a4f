// The executor's CUDA side: the same op plans as executor.cc over the GPU
// backend's DataPath (NCCL, device copies and kernels), bracketed by stream
// waits instead of host waits — the batch starts once flock's stream has
// caught up with each caller's stream at submission, and ends with an event
// the callers' streams (or a blocking synchronize) wait on.
#include "flock/common/logging.h"
#include "flock/engine/engine.h"
#include "flock/neighbor/gpu_steps.h"

namespace flock {

Status Engine::RunGpuBatch(const Response& response, const std::vector<PendingRequest*>& batch,
                           std::shared_ptr<GatheredTensor>* gathered, GpuEventPtr* done) {
  GpuBackend* gpu = gpu_.load(std::memory_order_acquire);
  if (gpu == nullptr) {
    return Status::Internal("a CUDA tensor reached the executor before the GPU backend was made");
  }
  FLOCK_RETURN_IF_ERROR(gpu->EnterDevice());
  struct Leave {
    GpuBackend* gpu;
    ~Leave() { gpu->LeaveDevice(); }
  } leave{gpu};
  const Status status = RunGpuWork(*gpu, response, batch, gathered);
  // Failed or not, what was queued may still touch the tensors: their users
  // (and the release of their memory) wait for this event.
  Result<GpuEventPtr> recorded = gpu->RecordDone();
  if (recorded.ok()) {
    *done = recorded.value();
    gpu_in_flight_.push_back(*done);
  }
  return status.ok() ? recorded.status() : status;
}

Status Engine::RunGpuWork(GpuBackend& gpu, const Response& response,
                          const std::vector<PendingRequest*>& batch,
                          std::shared_ptr<GatheredTensor>* gathered) {
  for (PendingRequest* r : batch) {
    if (r->op.ready == nullptr) {
      return Status::Internal("CUDA request '" + r->op.name + "' has no ready event");
    }
    FLOCK_RETURN_IF_ERROR(gpu.WaitReady(*r->op.ready));
  }
  if (!IsNeighborOp(response.kind)) return RunBatch(gpu, response, batch, gathered);
  PendingRequest& request = *batch.front();  // neighbor ops are never fused
  timeline_.Begin(request.op.name, "COMMUNICATE");
  const Status status = RunStepsOnGpu(gpu, transport_, request, gathered);
  timeline_.End(request.op.name);
  return status;
}

void Engine::CheckGpuWork() {
  if (gpu_in_flight_.empty()) return;
  GpuBackend* gpu = gpu_.load(std::memory_order_acquire);
  while (!gpu_in_flight_.empty()) {
    Result<bool> reached = gpu->Reached(*gpu_in_flight_.front());
    if (!reached.ok() || !reached.value()) break;
    gpu_in_flight_.pop_front();
  }
  const Status status = gpu->CheckAsyncErrors();
  if (status.ok()) return;
  // The backend keeps the error: every later CUDA op, and a blocking wait for
  // one of these, fails with it.
  FLOCK_LOG(kError, "engine") << "CUDA communication failed with " << gpu_in_flight_.size()
                              << " op(s) in flight: " << status.message()
                              << "; later CUDA ops fail with this error";
  gpu_in_flight_.clear();
}

}  // namespace flock
