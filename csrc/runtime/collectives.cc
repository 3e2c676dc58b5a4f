#include "flock/runtime/collectives.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include "flock/collectives/scatter_layout.h"

namespace flock {
namespace {

OpRequest Request(Runtime& runtime, OpKind kind, const std::string& name, const TensorView& input,
                  CommGroup group, Status local_status) {
  OpRequest op = MakeRequest(kind, name.empty() ? runtime.AutoName(OpKindName(kind)) : name, input);
  op.auto_named = name.empty();
  op.group = group;
  op.local_status = std::move(local_status);
  return op;
}

// Submits and waits; the gathered output of an allgather, if any, in `gathered`.
Status Run(Runtime& runtime, OpRequest op, const TensorView& output,
           std::shared_ptr<GatheredTensor>* gathered = nullptr) {
  Engine& engine = runtime.engine();
  FLOCK_ASSIGN_OR_RETURN(const HandleId handle,
                         engine.Submit(std::move(op), output, nullptr, /*wait_follows=*/true));
  FLOCK_ASSIGN_OR_RETURN(Completion done,
                         engine.Wait(handle, std::chrono::milliseconds(100), nullptr));
  if (gathered != nullptr) *gathered = std::move(done.gathered);
  return done.status;
}

// Copies an engine-made output into one `allocate` makes.
Status Deliver(const GatheredTensor& gathered, const OutputAllocator& allocate, const char* op) {
  FLOCK_ASSIGN_OR_RETURN(TensorView out, allocate(gathered.shape));
  if (out.dtype != gathered.dtype || out.shape != gathered.shape)
    return Status::InvalidArgument(std::string("the ") + op +
                                   " output allocated does not match its shape");
  if (!gathered.bytes.empty()) std::memcpy(out.data, gathered.bytes.data(), gathered.bytes.size());
  return Status::OK();
}

}  // namespace

Status Allreduce(Runtime& runtime, const TensorView& input, const TensorView& output,
                 const AllreduceOptions& options, Status local_status) {
  if (local_status.ok()) local_status = CheckReduceSupported(input.dtype, options.op);
  if (local_status.ok() && (output.dtype != input.dtype || output.shape != input.shape))
    local_status = Status::InvalidArgument("allreduce output does not match its input");
  OpRequest op =
      Request(runtime, OpKind::kAllreduce, options.name, input, options.group, local_status);
  op.reduce_op = options.op;
  return Run(runtime, std::move(op), output);
}

Status Broadcast(Runtime& runtime, const TensorView& tensor, const BroadcastOptions& options,
                 Status local_status) {
  const int size = runtime.transport().size(options.group);
  if (local_status.ok() && (options.root < 0 || options.root >= size)) {
    local_status = Status::InvalidArgument("root_rank " + std::to_string(options.root) +
                                           " is not a rank of a group of " + std::to_string(size));
  }
  OpRequest op =
      Request(runtime, OpKind::kBroadcast, options.name, tensor, options.group, local_status);
  op.root = options.root;
  return Run(runtime, std::move(op), tensor);
}

Status Reducescatter(Runtime& runtime, const TensorView& input, const TensorView& output,
                     const ReducescatterOptions& options, Status local_status) {
  Transport& t = runtime.transport();
  if (local_status.ok()) {
    local_status =
        CheckReducescatter(input, output, options.op, t.size(options.group), t.rank(options.group));
  }
  OpRequest op =
      Request(runtime, OpKind::kReducescatter, options.name, input, options.group, local_status);
  op.reduce_op = options.op;
  return Run(runtime, std::move(op), output);
}

Status Alltoall(Runtime& runtime, const TensorView& input, const OutputAllocator& allocate,
                const AlltoallOptions& options, std::vector<int64_t>* received_splits,
                Status local_status) {
  OpRequest op =
      Request(runtime, OpKind::kAlltoall, options.name, input, options.group, local_status);
  if (op.local_status.ok() && input.shape.empty())
    op.local_status =
        Status::InvalidArgument("alltoall needs a tensor with at least one dimension");
  if (op.local_status.ok()) {
    Result<std::vector<int64_t>> splits =
        ResolveSplits(options.splits, input.shape[0], runtime.transport().size(options.group));
    if (splits.ok())
      op.splits = std::move(splits).value();
    else
      op.local_status = splits.status();
  }
  std::shared_ptr<GatheredTensor> gathered;
  FLOCK_RETURN_IF_ERROR(Run(runtime, std::move(op), TensorView{}, &gathered));
  if (gathered == nullptr) return Status::Internal("alltoall completed without its output");
  if (received_splits != nullptr) *received_splits = gathered->received_splits;
  return Deliver(*gathered, allocate, "alltoall");
}

Status Allgather(Runtime& runtime, const TensorView& input, const OutputAllocator& allocate,
                 const AllgatherOptions& options, Status local_status) {
  OpRequest op =
      Request(runtime, OpKind::kAllgather, options.name, input, options.group, local_status);
  std::shared_ptr<GatheredTensor> gathered;
  FLOCK_RETURN_IF_ERROR(Run(runtime, std::move(op), TensorView{}, &gathered));
  if (gathered == nullptr) return Status::Internal("allgather completed without its output");
  return Deliver(*gathered, allocate, "allgather");
}

}  // namespace flock
