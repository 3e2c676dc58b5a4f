#include "flock/engine/request_finisher.h"

#include <utility>

namespace flock {

void RequestFinisher::Finish(PendingRequest& request, Status status,
                             std::shared_ptr<GatheredTensor> gathered, GpuEventPtr done) {
  if (!status.ok()) ++counters_.errors;
  if (request.neighbor_call >= 0 && device_call_end_) device_call_end_(request);
  timeline_.End(request.op.name);  // the op's span
  requests_.Release(request.op.name);
  handles_.Complete(request.handle, std::move(status), std::move(gathered), std::move(done));
}

void RequestFinisher::FinishBatch(const std::vector<PendingRequest*>& batch, const Status& status,
                                  const GpuEventPtr& done) {
  if (!status.ok()) counters_.errors += static_cast<int64_t>(batch.size());
  std::vector<HandleId> ids;
  ids.reserve(batch.size());
  for (PendingRequest* r : batch) {
    if (r->neighbor_call >= 0 && device_call_end_) device_call_end_(*r);
    timeline_.End(r->op.name);
    ids.push_back(r->handle);
  }
  requests_.ReleaseAll(batch);
  handles_.CompleteAll(ids, status, done);
}

}  // namespace flock
