// RequestFinisher: the one way a request ends, whatever ended it — its
// timeline span closed, its name free for reuse, its handle completed (which
// wakes, or holds the wake of, its waiter) and an error counted.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "flock/common/counters.h"
#include "flock/common/status.h"
#include "flock/common/timeline.h"
#include "flock/engine/handle_table.h"
#include "flock/engine/request_queue.h"
#include "flock/requests/pending_request.h"

namespace flock {

class RequestFinisher {
 public:
  RequestFinisher(Timeline& timeline, RequestQueue& requests, HandleTable& handles,
                  EngineCounters& counters)
      : timeline_(timeline), requests_(requests), handles_(handles), counters_(counters) {}

  // Called for each request that ends with neighbor_call >= 0 (a CUDA neighbor op).
  void SetDeviceCallEnd(std::function<void(const PendingRequest&)> on_end) {
    device_call_end_ = std::move(on_end);
  }

  void Finish(PendingRequest& request, Status status, std::shared_ptr<GatheredTensor> gathered,
              GpuEventPtr done = nullptr);
  // A fused batch: one handle-table lock for all of them.
  // `done`: a CUDA batch's completion event.
  void FinishBatch(const std::vector<PendingRequest*>& batch, const Status& status,
                   const GpuEventPtr& done = nullptr);

 private:
  Timeline& timeline_;
  RequestQueue& requests_;
  HandleTable& handles_;
  EngineCounters& counters_;
  std::function<void(const PendingRequest&)> device_call_end_;
};

}  // namespace flock
