#include "flock/neighbor/step_accumulator.h"

#include "flock/common/weighted_kernels.h"

namespace flock {

void StepAccumulator::Begin(BufferPool& pool, const ExchangeStep& spec, DataType dtype,
                            char* target, const char* input, const char* self, Status* status) {
  pool_ = &pool;
  spec_ = &spec;
  dtype_ = dtype;
  target_ = target;
  status_ = status;
  if (AccumulatorType(dtype) == dtype && target != input) {
    acc_ = target;
  } else {
    acc_storage_ = pool.Acquire(spec.target_count * DataTypeSize(AccumulatorType(dtype)));
    acc_ = acc_storage_.data();
  }
  self_ = self;
  self_pending_ = true;  // stored with the first contribution, in one pass
  sources_.assign(spec.recvs.size(), Source{});
}

void StepAccumulator::Announce(int index, double scale, int64_t bytes) {
  Source& source = sources_[static_cast<size_t>(index)];
  source.weight = spec_->recvs[static_cast<size_t>(index)].weight * scale;
  source.bytes = bytes;
}

void* StepAccumulator::TakeAccumulatorFor(int index) {
  const StepRecv& recv = spec_->recvs[static_cast<size_t>(index)];
  const Source& source = sources_[static_cast<size_t>(index)];
  // Only before anything is in acc, into a sum built in the target itself,
  // from a lane covering all of it with a weight that counts.
  const bool lands =
      acc_ == target_ && self_pending_ && acc_lane_ < 0 && scratch_waiting_ < 0 && status_->ok() &&
      recv.offset == 0 && recv.count == spec_->self_count &&
      spec_->self_count == spec_->target_count && source.weight != 0.0 &&
      source.bytes == spec_->target_count * static_cast<int64_t>(DataTypeSize(dtype_));
  if (!lands) return nullptr;
  acc_lane_ = index;
  return acc_;
}

int StepAccumulator::NextScratchLane() {
  if (scratch_owner_ >= 0 || scratch_waiting_ >= 0) return -1;
  if (lane_queue_.empty()) {
    scratch_.Release();  // back to the pool early
    return -1;
  }
  const int index = lane_queue_.front();
  lane_queue_.erase(lane_queue_.begin());
  const size_t bytes = static_cast<size_t>(sources_[static_cast<size_t>(index)].bytes);
  if (scratch_.size() < bytes) scratch_ = pool_->Acquire(bytes);
  scratch_owner_ = index;
  return index;
}

bool StepAccumulator::AddInline(int index, const void* payload) {
  if (acc_lane_ >= 0) {  // acc is still being written: add this once it has landed
    const char* bytes = static_cast<const char*>(payload);
    const size_t size = static_cast<size_t>(sources_[static_cast<size_t>(index)].bytes);
    inline_waiting_.emplace_back(index, std::vector<char>(bytes, bytes + size));
    return false;
  }
  Contribute(index, payload);
  return true;
}

int StepAccumulator::ScratchLanded(bool ok) {
  const int index = std::exchange(scratch_owner_, -1);
  if (ok && acc_lane_ >= 0) {  // acc is still being written: add this once it has landed
    scratch_waiting_ = index;
    return -1;
  }
  if (ok) Contribute(index, scratch_.data());
  return index;
}

Status StepAccumulator::WeightedBlendFor(int lane) {
  return WeightedBlend(acc_, sources_[static_cast<size_t>(lane)].weight, self_, spec_->self_weight,
                       dtype_, spec_->self_count);
}

void StepAccumulator::Contribute(int index, const void* data) {
  if (!status_->ok()) return;
  const StepRecv& recv = spec_->recvs[static_cast<size_t>(index)];
  const double w = sources_[static_cast<size_t>(index)].weight;
  if (self_pending_ && w != 0.0 && recv.offset == 0 && recv.count == spec_->self_count) {
    // The first contribution covering the whole target: store and add in one pass.
    self_pending_ = false;
    *status_ = WeightedPair(acc_, self_, spec_->self_weight, data, w, dtype_, spec_->self_count);
    return;
  }
  if (w == 0.0) return;
  StoreSelf();
  if (!status_->ok()) return;
  char* acc = static_cast<char*>(acc_) + recv.offset * DataTypeSize(AccumulatorType(dtype_));
  *status_ = WeightedAccumulate(acc, data, dtype_, w, recv.count);
}

void StepAccumulator::StoreSelf() {
  if (!self_pending_) return;
  self_pending_ = false;
  if (status_->ok())
    *status_ = WeightedStore(acc_, self_, dtype_, spec_->self_weight, spec_->self_count);
}

Status StepAccumulator::Finish() {
  StoreSelf();
  if (!status_->ok()) return *status_;
  if (acc_ == target_) return Status::OK();
  return StoreAccumulator(target_, acc_, dtype_, spec_->target_count);
}

}  // namespace flock
