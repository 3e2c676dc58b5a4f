#include "flock/neighbor/gpu_steps.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "flock/common/weighted_kernels.h"

namespace flock {
namespace {

// One transfer as both sides see it: (step, sender, receiver, elements).
using Transfer = std::array<int64_t, 4>;

// Device workspace slots (slot 0 is the fusion buffer).
enum Slot : int { kRecvSlot = 1, kScaledSlot, kAccSlot, kMeanSlot, kResultSlot };

std::vector<Transfer> MyTransfers(const std::vector<ExchangeStep>& steps, int me, bool sends) {
  std::vector<Transfer> out;
  for (size_t k = 0; k < steps.size(); ++k) {
    const int64_t step = static_cast<int64_t>(k);
    if (sends) {
      for (const StepSend& s : steps[k].sends) out.push_back({step, me, s.peer, s.count});
    } else {
      for (const StepRecv& r : steps[k].recvs) out.push_back({step, r.peer, me, r.count});
    }
  }
  return out;
}

// Every rank's `mine`, concatenated in rank order (two allgathers).
Result<std::vector<Transfer>> GatherAll(Transport& host, const std::vector<Transfer>& mine) {
  const int size = host.size(CommGroup::kWorld);
  const int64_t my_bytes = static_cast<int64_t>(mine.size() * sizeof(Transfer));
  std::vector<int64_t> bytes(static_cast<size_t>(size));
  FLOCK_RETURN_IF_ERROR(
      host.Allgather(&my_bytes, sizeof(my_bytes), bytes.data(), CommGroup::kWorld));
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  std::vector<Transfer> all(static_cast<size_t>(total) / sizeof(Transfer));
  FLOCK_RETURN_IF_ERROR(host.Allgatherv(mine.data(), bytes, all.data(), CommGroup::kWorld));
  return all;
}

std::string Describe(const std::string& name, const Transfer& t, bool missing_receive) {
  const std::string from = "rank " + std::to_string(t[1]), to = "rank " + std::to_string(t[2]);
  const std::string what = std::to_string(t[3]) + " elements in step " + std::to_string(t[0] + 1);
  return "neighbor op '" + name + "' on CUDA tensors: " +
         (missing_receive ? from + " sends " + what + " to " + to + ", but " + to +
                                " does not receive them (check the weights and topology)"
                          : to + " expects " + what + " from " + from + ", but " + from +
                                " does not send them (check the weights and topology)");
}

}  // namespace

Status CheckTransfersAgree(Transport& host, const std::string& name,
                           const std::vector<ExchangeStep>& steps) {
  const int me = host.rank(CommGroup::kWorld);
  FLOCK_ASSIGN_OR_RETURN(std::vector<Transfer> sends,
                         GatherAll(host, MyTransfers(steps, me, true)));
  FLOCK_ASSIGN_OR_RETURN(std::vector<Transfer> recvs,
                         GatherAll(host, MyTransfers(steps, me, false)));
  std::sort(sends.begin(), sends.end());
  std::sort(recvs.begin(), recvs.end());
  if (sends == recvs) return Status::OK();
  std::vector<Transfer> unreceived, unsent;
  std::set_difference(sends.begin(), sends.end(), recvs.begin(), recvs.end(),
                      std::back_inserter(unreceived));
  std::set_difference(recvs.begin(), recvs.end(), sends.begin(), sends.end(),
                      std::back_inserter(unsent));
  const bool first_is_send = !unreceived.empty() && (unsent.empty() || unreceived[0] < unsent[0]);
  return Status::Mismatch(first_is_send ? Describe(name, unreceived[0], true)
                                        : Describe(name, unsent[0], false));
}

namespace {

class GpuStepRunner {
 public:
  GpuStepRunner(GpuBackend& gpu, const PendingRequest& r)
      : gpu_(gpu),
        dtype_(r.op.tensor.dtype),
        width_(static_cast<int64_t>(DataTypeSize(dtype_))),
        count_(r.op.tensor.num_elements()),
        input_(static_cast<char*>(r.op.tensor.data)),
        output_(static_cast<char*>(r.output.data)) {}

  Status Run(const ExchangeStep& step) {
    return step.mode == ExchangeStep::Mode::kReduce ? Reduce(step) : Place(step);
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

  // The sends of `step` in the open group; scaled copies where the sender
  // applies a dst weight.
  Status PostSends(const ExchangeStep& step) {
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
    FLOCK_RETURN_IF_ERROR(gpu_.GroupStart());
    Status status;
    for (size_t i = 0; i < step.sends.size() && status.ok(); ++i) {
      status = gpu_.Send(from[i], step.sends[i].count * width_, step.sends[i].peer);
    }
    return status;
  }

  Status Reduce(const ExchangeStep& step) {
    int64_t recv_bytes = 0;
    for (const StepRecv& r : step.recvs) recv_bytes += r.count * width_;
    FLOCK_ASSIGN_OR_RETURN(char* slots, Slot(kRecvSlot, recv_bytes));
    const int64_t acc_width = static_cast<int64_t>(DataTypeSize(AccumulatorType(dtype_)));
    FLOCK_ASSIGN_OR_RETURN(char* acc, Slot(kAccSlot, step.target_count * acc_width));
    FLOCK_RETURN_IF_ERROR(PostSends(step));
    Status status;
    char* slot = slots;
    for (const StepRecv& r : step.recvs) {
      if (status.ok()) status = gpu_.Recv(slot, r.count * width_, r.peer);
      slot += r.count * width_;
    }
    const Status ended = gpu_.GroupEnd();
    FLOCK_RETURN_IF_ERROR(status);
    FLOCK_RETURN_IF_ERROR(ended);
    FLOCK_ASSIGN_OR_RETURN(char* self, Buffer(step.self_from));
    FLOCK_RETURN_IF_ERROR(gpu_.WeightedStore(acc, self + step.self_offset * width_, dtype_,
                                             step.self_weight, step.target_count));
    slot = slots;
    for (const StepRecv& r : step.recvs) {
      FLOCK_RETURN_IF_ERROR(
          gpu_.WeightedAccumulate(acc + r.offset * acc_width, slot, dtype_, r.weight, r.count));
      slot += r.count * width_;
    }
    FLOCK_ASSIGN_OR_RETURN(char* target, Buffer(step.target));
    return gpu_.StoreAccumulator(target, acc, dtype_, step.target_count);
  }

  Status Place(const ExchangeStep& step) {
    FLOCK_ASSIGN_OR_RETURN(char* target, Buffer(step.target));
    FLOCK_RETURN_IF_ERROR(PostSends(step));
    Status status;
    for (const StepRecv& r : step.recvs) {
      if (status.ok()) status = gpu_.Recv(target + r.offset * width_, r.count * width_, r.peer);
    }
    const Status ended = gpu_.GroupEnd();
    FLOCK_RETURN_IF_ERROR(status);
    FLOCK_RETURN_IF_ERROR(ended);
    FLOCK_ASSIGN_OR_RETURN(char* self, Buffer(step.self_from));
    return gpu_.Copy(target + step.self_target_offset * width_, self + step.self_offset * width_,
                     step.self_count * width_);
  }

  GpuBackend& gpu_;
  const DataType dtype_;
  const int64_t width_;
  const int64_t count_;
  char* const input_;
  char* const output_;
};

}  // namespace

Status RunStepsOnGpu(GpuBackend& gpu, Transport& host, const PendingRequest& request) {
  const OpRequest& op = request.op;
  if (op.steps == nullptr) return Status::Internal("neighbor op '" + op.name + "' has no steps");
  for (const ExchangeStep& step : *op.steps) {
    if (step.mode == ExchangeStep::Mode::kGather) {
      return Status::Unsupported("neighbor_allgather does not take CUDA tensors yet");
    }
  }
  FLOCK_RETURN_IF_ERROR(CheckTransfersAgree(host, op.name, *op.steps));
  GpuStepRunner runner(gpu, request);
  for (const ExchangeStep& step : *op.steps) FLOCK_RETURN_IF_ERROR(runner.Run(step));
  return Status::OK();
}

}  // namespace flock
