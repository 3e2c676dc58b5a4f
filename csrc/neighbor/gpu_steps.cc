#include "flock/neighbor/gpu_steps.h"

#include <algorithm>
#include <string>
#include <vector>

#include "flock/common/weighted_kernels.h"
#include "flock/neighbor/gpu_transfer_check.h"

namespace flock {
namespace {

// Device workspace slots (slot 0 is the fusion buffer).
enum Slot : int { kRecvSlot = 1, kScaledSlot, kAccSlot, kMeanSlot, kResultSlot };

// An NCCL group that is always closed, whatever returns early (the group
// depth is per thread, and the thread may be a user's driving the loop).
class GroupScope {
 public:
  explicit GroupScope(GpuBackend& gpu) : gpu_(gpu) { status_ = gpu_.GroupStart(); }
  ~GroupScope() {
    if (status_.ok() && open_) (void)gpu_.GroupEnd();
  }
  const Status& started() const { return status_; }
  Status End() {
    open_ = false;
    return status_.ok() ? gpu_.GroupEnd() : status_;
  }

 private:
  GpuBackend& gpu_;
  Status status_;
  bool open_ = true;
};

// The communicator a step's transfers take, and a peer's rank in it. The
// hierarchical op's steps stay on one machine (local reduce-scatter and
// gather: the machine's communicator) or between the ranks of one local rank
// (the exchange between machines: the cross communicator); its machines are
// homogeneous (rank = machine * L + local rank). Other ops use the world's.
struct StepComm {
  CommGroup group = CommGroup::kWorld;
  int local_size = 1;
  int PeerIn(int world_rank) const {
    if (group == CommGroup::kLocal) return world_rank % local_size;
    if (group == CommGroup::kCross) return world_rank / local_size;
    return world_rank;
  }
};

StepComm CommOf(const ExchangeStep& step, bool hierarchical, int me, int local_size) {
  StepComm comm;
  comm.local_size = local_size;
  if (!hierarchical) return comm;
  bool local = true, cross = true;
  auto look = [&](int peer) {
    local = local && peer / local_size == me / local_size;
    cross = cross && peer % local_size == me % local_size;
  };
  for (const StepSend& s : step.sends) look(s.peer);
  for (const StepRecv& r : step.recvs) look(r.peer);
  comm.group = local ? CommGroup::kLocal : cross ? CommGroup::kCross : CommGroup::kWorld;
  return comm;
}

class GpuStepRunner {
 public:
  GpuStepRunner(GpuBackend& gpu, const PendingRequest& r, int me, int local_size)
      : gpu_(gpu),
        hierarchical_(r.op.kind == OpKind::kHierarchicalNeighborAllreduce),
        me_(me),
        local_size_(local_size),
        dtype_(r.op.tensor.dtype),
        width_(static_cast<int64_t>(DataTypeSize(dtype_))),
        acc_width_(static_cast<int64_t>(DataTypeSize(AccumulatorType(dtype_)))),
        count_(r.op.tensor.num_elements()),
        tensor_(r.op.tensor),
        input_(static_cast<char*>(r.op.tensor.data)),
        output_(static_cast<char*>(r.output.data)) {}

  // Every device buffer the steps will use, allocated now: a rank that cannot
  // says so in the transfer check, before any rank has called NCCL.
  Status Reserve(const std::vector<ExchangeStep>& steps) {
    int64_t recv = 0, scaled = 0, acc = 0;
    for (const ExchangeStep& step : steps) {
      int64_t r = 0, sc = 0;
      for (const StepRecv& x : step.recvs) r += x.count * width_;
      for (const StepSend& x : step.sends) sc += x.scale != 1.0 ? x.count * width_ : 0;
      recv = std::max(recv, r);
      scaled = std::max(scaled, sc);
      acc = std::max(acc, step.target_count * acc_width_);
    }
    const std::pair<int, int64_t> slots[] = {{kRecvSlot, recv},
                                             {kScaledSlot, scaled},
                                             {kAccSlot, acc},
                                             {kMeanSlot, count_ * width_},
                                             {kResultSlot, count_ * width_}};
    for (const auto& [slot, bytes] : slots) FLOCK_RETURN_IF_ERROR(Slot(slot, bytes).status());
    return Status::OK();
  }

  Status Run(const ExchangeStep& step) {
    return step.mode == ExchangeStep::Mode::kReduce ? Reduce(step) : Place(step);
  }

  // neighbor_allgather: the in-neighbours' tensors, `counts` elements each
  // (learned in the transfer check), concatenated in receive order into
  // device memory allocated for the output.
  Status Gather(const ExchangeStep& step, const std::vector<int64_t>& counts,
                std::shared_ptr<GatheredTensor>* gathered) {
    if (counts.size() != step.recvs.size()) {
      return Status::Internal("neighbor_allgather: sizes learned for " +
                              std::to_string(counts.size()) + " of " +
                              std::to_string(step.recvs.size()) + " sources");
    }
    auto out = std::make_shared<GatheredTensor>();
    out->dtype = dtype_;
    out->device = tensor_.device;
    out->shape = tensor_.shape.empty() ? std::vector<int64_t>{1} : tensor_.shape;
    int64_t total = 0, row = 1;
    for (int64_t c : counts) total += c;
    for (size_t d = 1; d < out->shape.size(); ++d) row *= out->shape[d];
    out->shape[0] = row > 0 ? total / row : 0;
    FLOCK_ASSIGN_OR_RETURN(out->device_data, gpu_.AllocateOutput(total * width_));
    char* into = static_cast<char*>(out->device_data.get());
    GroupScope group(gpu_);
    FLOCK_RETURN_IF_ERROR(group.started());
    for (const StepSend& s : step.sends) {
      FLOCK_RETURN_IF_ERROR(
          gpu_.Send(input_ + s.offset * width_, s.count * width_, s.peer, CommGroup::kWorld));
    }
    for (size_t i = 0; i < step.recvs.size(); ++i) {
      FLOCK_RETURN_IF_ERROR(
          gpu_.Recv(into, counts[i] * width_, step.recvs[i].peer, CommGroup::kWorld));
      into += counts[i] * width_;
    }
    FLOCK_RETURN_IF_ERROR(group.End());
    *gathered = std::move(out);
    return Status::OK();
  }

 private:
  Result<char*> Buffer(StepBuffer which) {
    switch (which) {
      case StepBuffer::kInput: return input_;
      case StepBuffer::kOutput: return output_;
      case StepBuffer::kMean: return Slot(kMeanSlot, count_ * width_);
      case StepBuffer::kResult: return Slot(kResultSlot, count_ * width_);
    }
    return Status::Internal("unknown step buffer");
  }
  Result<char*> Slot(int slot, int64_t bytes) {
    FLOCK_ASSIGN_OR_RETURN(void* data, gpu_.Workspace(slot, std::max<int64_t>(bytes, 1)));
    return static_cast<char*>(data);
  }

  // Where each send reads from: its buffer, or a copy scaled by its dst weight
  // (the sender applies it).
  Result<std::vector<const char*>> SendSources(const ExchangeStep& step) {
    int64_t scaled_bytes = 0;
    for (const StepSend& s : step.sends) scaled_bytes += s.scale != 1.0 ? s.count * width_ : 0;
    FLOCK_ASSIGN_OR_RETURN(char* scaled, Slot(kScaledSlot, scaled_bytes));
    std::vector<const char*> from;
    for (const StepSend& s : step.sends) {
      FLOCK_ASSIGN_OR_RETURN(char* base, Buffer(s.from));
      const char* data = base + s.offset * width_;
      if (s.scale != 1.0) {
        FLOCK_RETURN_IF_ERROR(gpu_.Copy(scaled, data, s.count * width_));
        FLOCK_RETURN_IF_ERROR(gpu_.Scale(scaled, s.count, dtype_, s.scale));
        data = scaled;
        scaled += s.count * width_;
      }
      from.push_back(data);
    }
    return from;
  }

  // One group: the step's sends, and its receives into `slots` (packed) or,
  // with slots null, into place in `target`.
  Status Exchange(const ExchangeStep& step, char* slots, char* target) {
    FLOCK_ASSIGN_OR_RETURN(const std::vector<const char*> from, SendSources(step));
    const StepComm comm = CommOf(step, hierarchical_, me_, local_size_);
    GroupScope group(gpu_);
    FLOCK_RETURN_IF_ERROR(group.started());
    for (size_t i = 0; i < step.sends.size(); ++i) {
      const StepSend& s = step.sends[i];
      FLOCK_RETURN_IF_ERROR(gpu_.Send(from[i], s.count * width_, comm.PeerIn(s.peer), comm.group));
    }
    for (const StepRecv& r : step.recvs) {
      char* into = slots != nullptr ? slots : target + r.offset * width_;
      FLOCK_RETURN_IF_ERROR(gpu_.Recv(into, r.count * width_, comm.PeerIn(r.peer), comm.group));
      if (slots != nullptr) slots += r.count * width_;
    }
    return group.End();
  }

  // The sum builds up in the target itself when the dtype is its own
  // accumulator (float32, float64) — one pass less — unless the target is
  // this rank's own part at an offset (other elements of it still to read).
  // In place is fine: the sends are over (stream order) before the sum starts.
  Result<char*> Accumulator(const ExchangeStep& step, char* self, char* target) {
    if (acc_width_ == width_ && (target != self || step.self_offset == 0)) return target;
    return Slot(kAccSlot, step.target_count * acc_width_);
  }

  Status Reduce(const ExchangeStep& step) {
    int64_t recv_bytes = 0;
    for (const StepRecv& r : step.recvs) recv_bytes += r.count * width_;
    FLOCK_ASSIGN_OR_RETURN(char* slots, Slot(kRecvSlot, recv_bytes));
    FLOCK_ASSIGN_OR_RETURN(char* self, Buffer(step.self_from));
    FLOCK_ASSIGN_OR_RETURN(char* target, Buffer(step.target));
    FLOCK_ASSIGN_OR_RETURN(char* acc, Accumulator(step, self, target));
    FLOCK_RETURN_IF_ERROR(Exchange(step, slots, nullptr));
    FLOCK_RETURN_IF_ERROR(gpu_.WeightedStore(acc, self + step.self_offset * width_, dtype_,
                                             step.self_weight, step.target_count));
    char* slot = slots;
    for (const StepRecv& r : step.recvs) {
      FLOCK_RETURN_IF_ERROR(
          gpu_.WeightedAccumulate(acc + r.offset * acc_width_, slot, dtype_, r.weight, r.count));
      slot += r.count * width_;
    }
    return gpu_.StoreAccumulator(target, acc, dtype_, step.target_count);  // no-op when the same
  }

  Status Place(const ExchangeStep& step) {
    FLOCK_ASSIGN_OR_RETURN(char* target, Buffer(step.target));
    FLOCK_RETURN_IF_ERROR(Exchange(step, nullptr, target));
    FLOCK_ASSIGN_OR_RETURN(char* self, Buffer(step.self_from));
    return gpu_.Copy(target + step.self_target_offset * width_, self + step.self_offset * width_,
                     step.self_count * width_);
  }

  GpuBackend& gpu_;
  const bool hierarchical_;
  const int me_;
  const int local_size_;
  const DataType dtype_;
  const int64_t width_;
  const int64_t acc_width_;
  const int64_t count_;
  const TensorView tensor_;
  char* const input_;
  char* const output_;
};

}  // namespace

// Every rank runs this at the same point (the op is negotiated): the
// communicators are made first, outside any group, then the buffers, then the
// check, and only then NCCL's transfers.
Status RunStepsOnGpu(GpuBackend& gpu, Transport& host, const PendingRequest& request,
                     std::shared_ptr<GatheredTensor>* gathered) {
  const OpRequest& op = request.op;
  if (op.steps == nullptr) return Status::Internal("neighbor op '" + op.name + "' has no steps");
  const bool hierarchical = op.kind == OpKind::kHierarchicalNeighborAllreduce;
  FLOCK_RETURN_IF_ERROR(gpu.Prepare(CommGroup::kWorld));
  if (hierarchical) {  // every rank of the job runs the op: each group's members meet here
    FLOCK_RETURN_IF_ERROR(gpu.Prepare(CommGroup::kLocal));
    FLOCK_RETURN_IF_ERROR(gpu.Prepare(CommGroup::kCross));
  }
  GpuStepRunner runner(gpu, request, host.rank(CommGroup::kWorld), host.size(CommGroup::kLocal));
  const Status ready = runner.Reserve(*op.steps);
  std::vector<int64_t> gather_counts;
  FLOCK_RETURN_IF_ERROR(CheckTransfersAgree(host, op.name, *op.steps, ready, &gather_counts));
  for (const ExchangeStep& step : *op.steps) {
    FLOCK_RETURN_IF_ERROR(step.mode == ExchangeStep::Mode::kGather
                              ? runner.Gather(step, gather_counts, gathered)
                              : runner.Run(step));
  }
  return Status::OK();
}

}  // namespace flock
