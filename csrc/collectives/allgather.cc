// Allgather: concatenation along dim 0 of every rank's tensor, in rank order.
// The signature exchange that checks the other dims also tells every rank
// each input's dim 0, so the variable-size gather needs no extra round.
#include "flock/collectives/collectives.h"
#include "flock/requests/op_signature.h"

namespace flock {

Result<GatherLayout> PlanGather(DataType dtype, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& first_dims) {
  if (shape.empty()) return Status::Internal("allgather: the input shape needs a dim 0");
  // Every rank agreed on dims 1.., so a row has the same byte size everywhere.
  const std::optional<int64_t> row_bytes =
      CheckedSizeBytes(dtype, shape.data() + 1, shape.size() - 1);
  GatherLayout layout;
  layout.output_shape = shape;
  layout.output_shape[0] = 0;
  for (int64_t rows : first_dims) {
    int64_t bytes = 0;
    const bool fits =
        row_bytes && rows >= 0 && !__builtin_mul_overflow(rows, *row_bytes, &bytes) &&
        !__builtin_add_overflow(layout.total_bytes, bytes, &layout.total_bytes) &&
        !__builtin_add_overflow(layout.output_shape[0], rows, &layout.output_shape[0]);
    if (!fits) {
      return Status::Internal("allgather: rows per rank " + ShapeToString(first_dims) +
                              " with rows of shape " + ShapeToString(shape) +
                              " make no output shape of at most 2^63 bytes");
    }
    layout.recv_bytes.push_back(bytes);
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
  FLOCK_ASSIGN_OR_RETURN(const GatherLayout layout, PlanGather(in.dtype, in.shape, first_dims));
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
