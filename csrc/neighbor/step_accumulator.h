// StepAccumulator: the receive side of one reducing neighbour step (pure: it
// never touches the transport). It builds
//     target = self_weight * self + sum_i weight_i * scale_i * x_i
// as the sources' tensors arrive, in any order, holding at most about one
// extra tensor:
//   - the sum builds up in the target itself, unless it needs a wider type
//     (float16/bfloat16 accumulate in float32) or the target is the input (in
//     place: the input must stay intact until it has been sent);
//   - this rank's part is stored with the first contribution that covers the
//     whole target, in one pass (or at the end, if none comes);
//   - a lane (a tensor too large to travel inline) may land in the sum itself
//     while nothing is in it yet: then the next lane fills the one scratch
//     buffer meanwhile, and inline payloads that arrive are copied and added
//     once the first lane has landed; other lanes wait in a queue for the
//     scratch buffer, one at a time.
// NeighborExchange starts and tests the transfers into the buffers this class
// hands out, and tells it when each lands.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "flock/common/buffer_pool.h"
#include "flock/common/data_type.h"
#include "flock/common/status.h"
#include "flock/requests/exchange_step.h"

namespace flock {

class StepAccumulator {
 public:
  // `spec` is a kReduce step; `status` the step's (a failed step adds nothing more).
  void Begin(BufferPool& pool, const ExchangeStep& spec, DataType dtype, char* target,
             const char* input, const char* self, Status* status);

  // Source `index` (spec.recvs[index]) announced its tensor: scaled by the
  // sender, of `bytes` bytes.
  void Announce(int index, double scale, int64_t bytes);

  // A lane from source `index`: the sum itself, if it can land there now
  // (then it is the accumulator's lane until AccumulatorLanded), else nullptr.
  void* TakeAccumulatorFor(int index);
  // Otherwise it waits for the scratch buffer.
  void QueueLane(int index) { lane_queue_.push_back(index); }
  // The next queued lane, once the scratch buffer is free: its index (the
  // caller receives it into scratch()), or -1.
  int NextScratchLane();
  char* scratch() { return scratch_.data(); }
  // The lane the caller could not start in scratch: scratch is free again.
  void ScratchLaneFailed() { scratch_owner_ = -1; }
  int scratch_owner() const { return scratch_owner_; }

  // An inline payload from source `index`: true when it has been added (it
  // is done), false when it waits for the accumulator's lane (copied).
  bool AddInline(int index, const void* payload);
  // The lane in scratch has landed (or failed): its index when it is done
  // now, -1 when it waits for the accumulator's lane.
  int ScratchLanded(bool ok);
  // The accumulator's lane has landed (or failed); `done(index)` for it and
  // for every source that waited for it.
  template <typename Done>
  void AccumulatorLanded(const Status& received, Done&& done);

  // Nothing in flight or waiting here (the caller's transfers aside).
  bool settled() const {
    return lane_queue_.empty() && acc_lane_ < 0 && scratch_waiting_ < 0 && scratch_owner_ < 0;
  }
  bool has_accumulator_lane() const { return acc_lane_ >= 0; }
  // A lane landed in scratch while the accumulator's lane was in flight.
  bool scratch_waiting() const { return scratch_waiting_ >= 0; }
  int accumulator_lane() const { return acc_lane_; }
  // Every source is in: this rank's part if still pending, then the sum into the target.
  Status Finish();

 private:
  struct Source {
    double weight = 0;  // the receiver's weight times the sender's scale
    int64_t bytes = 0;
  };
  void Contribute(int index, const void* data);
  void StoreSelf();
  // acc_ = weight * (the lane that landed in it) + self_weight * self, in place.
  Status WeightedBlendFor(int lane);

  const ExchangeStep* spec_ = nullptr;
  DataType dtype_ = DataType::kFloat32;
  char* target_ = nullptr;
  void* acc_ = nullptr;  // where the sum builds up: target_, or acc_storage_
  PooledBuffer acc_storage_;
  const char* self_ = nullptr;
  bool self_pending_ = false;  // self * self_weight not yet in acc_
  Status* status_ = nullptr;
  BufferPool* pool_ = nullptr;
  std::vector<Source> sources_;
  PooledBuffer scratch_;
  int scratch_owner_ = -1;  // the lane being received into scratch_
  // Lanes waiting for the scratch buffer, oldest first (a vector allocates
  // nothing while empty; a deque does).
  std::vector<int> lane_queue_;
  int acc_lane_ = -1;         // the lane landing in acc_ itself
  int scratch_waiting_ = -1;  // landed in scratch while acc_lane_ was in flight
  std::vector<std::pair<int, std::vector<char>>> inline_waiting_;
};

template <typename Done>
void StepAccumulator::AccumulatorLanded(const Status& received, Done&& done) {
  const int lane = acc_lane_;
  acc_lane_ = -1;
  if (!received.ok()) {
    if (status_->ok()) *status_ = received;
  } else if (status_->ok()) {
    self_pending_ = false;
    *status_ = WeightedBlendFor(lane);
  }
  done(lane);
  if (scratch_waiting_ >= 0) {
    const int waiting = std::exchange(scratch_waiting_, -1);
    Contribute(waiting, scratch_.data());
    done(waiting);
  }
  for (auto& [index, payload] : inline_waiting_) {
    Contribute(index, payload.data());
    done(index);
  }
  inline_waiting_.clear();
}

}  // namespace flock
