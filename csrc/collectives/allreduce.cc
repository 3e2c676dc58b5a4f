// Allreduce: every rank ends with the element-wise reduction of all inputs.
// Average is a sum followed by a local scale by 1/size, so integer types,
// which have no average, are rejected before any byte moves.
#include "flock/collectives/collectives.h"
#include "flock/requests/op_signature.h"

namespace flock {

Status Allreduce(Transport& transport, const TensorView& input, const TensorView& output,
                 const AllreduceOptions& options, Status local_status) {
  OpRequest request = MakeRequest(OpKind::kAllreduce, options.name, input);
  request.reduce_op = options.op;
  request.group = options.group;
  if (local_status.ok()) local_status = CheckReduceSupported(input.dtype, options.op);
  if (local_status.ok() && (output.dtype != input.dtype || output.shape != input.shape)) {
    local_status = Status::Internal("allreduce output does not match its input");
  }
  request.local_status = local_status;
  FLOCK_RETURN_IF_ERROR(AgreeOnRequest(transport, options.group, request, 0, nullptr));

  const int64_t count = input.num_elements();
  FLOCK_RETURN_IF_ERROR(
      transport.Allreduce(input.data, output.data, count, input.dtype, options.op, options.group));
  if (options.op == ReduceOp::kAverage) {
    FLOCK_RETURN_IF_ERROR(
        ScaleInPlace(output.data, count, output.dtype, 1.0 / transport.size(options.group)));
  }
  return Status::OK();
}

}  // namespace flock
