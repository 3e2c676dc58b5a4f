// Allgather: concatenation along dim 0 of every rank's tensor, in rank order.
// The signature exchange that checks the other dims also tells every rank
// each input's dim 0, so the variable-size gather needs no extra round.
#include "flock/ops/collectives.h"
#include "flock/ops/op_signature.h"

namespace flock {

GatherLayout PlanGather(DataType dtype, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& first_dims) {
  // Every rank agreed on dims 1.., so a row has the same byte size everywhere.
  int64_t row_bytes = static_cast<int64_t>(DataTypeSize(dtype));
  for (size_t d = 1; d < shape.size(); ++d) row_bytes *= shape[d];
  GatherLayout layout;
  layout.output_shape = shape;
  layout.output_shape[0] = 0;
  for (int64_t rows : first_dims) {
    layout.output_shape[0] += rows;
    layout.recv_bytes.push_back(rows * row_bytes);
    layout.total_bytes += rows * row_bytes;
  }
  return layout;
}

Status Allgather(Transport& transport, const TensorView& input, const OutputAllocator& allocate,
                 const AllgatherOptions& options, Status local_status) {
  TensorView in = input;
  if (in.shape.empty()) in.shape = {1};  // a 0-d tensor gathers as one row
  OpRequest request = MakeRequest(OpKind::kAllgather, options.name, in);
  request.group = options.group;
  request.local_status = local_status;
  std::vector<OpSignature> all;
  FLOCK_RETURN_IF_ERROR(AgreeOnRequest(transport, options.group, request, 0, &all));

  std::vector<int64_t> first_dims;
  for (const OpSignature& s : all) first_dims.push_back(s.dims[0]);
  const GatherLayout layout = PlanGather(in.dtype, in.shape, first_dims);
  Result<TensorView> output = allocate(layout.output_shape);
  // Allocation can only fail on this rank (memory); it still joins the gather,
  // into scratch, so no peer hangs, and then reports the failure.
  std::vector<char> scratch;
  void* out = nullptr;
  if (output.ok()) {
    out = output.value().data;
  } else {
    scratch.resize(static_cast<size_t>(layout.total_bytes) + 1);
    out = scratch.data();
  }
  FLOCK_RETURN_IF_ERROR(transport.Allgatherv(in.data, layout.recv_bytes, out, options.group));
  return output.status();
}

}  // namespace flock
