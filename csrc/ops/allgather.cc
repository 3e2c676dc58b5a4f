// Allgather: concatenation along dim 0 of every rank's tensor, in rank order.
// The signature exchange that checks the other dims also tells every rank
// each input's dim 0, so the variable-size gather needs no extra round.
#include "ops/collectives.h"
#include "ops/op_signature.h"

namespace flock {

Status Allgather(Transport& transport, const TensorView& input, const OutputAllocator& allocate,
                 const AllgatherOptions& options, Status local_status) {
  TensorView in = input;
  if (in.shape.empty()) in.shape = {1};  // a 0-d tensor gathers as one row
  OpRequest request = MakeRequest(OpKind::kAllgather, options.name, in);
  request.group = options.group;
  request.local_status = local_status;
  std::vector<OpSignature> all;
  FLOCK_RETURN_IF_ERROR(AgreeOnRequest(transport, options.group, request, 0, &all));

  // Every rank agreed on dims 1.., so a row has the same byte size everywhere.
  int64_t row_bytes = static_cast<int64_t>(DataTypeSize(in.dtype));
  for (size_t d = 1; d < in.shape.size(); ++d) row_bytes *= in.shape[d];
  std::vector<int64_t> shape = in.shape;
  shape[0] = 0;
  std::vector<int64_t> recv_bytes;
  for (const OpSignature& s : all) {
    shape[0] += s.dims[0];
    recv_bytes.push_back(s.dims[0] * row_bytes);
  }
  Result<TensorView> output = allocate(shape);
  // Allocation can only fail on this rank (memory); it still joins the gather,
  // into scratch, so no peer hangs, and then reports the failure.
  std::vector<char> scratch;
  void* out = nullptr;
  if (output.ok()) {
    out = output.value().data;
  } else {
    int64_t total = 0;
    for (int64_t b : recv_bytes) total += b;
    scratch.resize(static_cast<size_t>(total) + 1);
    out = scratch.data();
  }
  FLOCK_RETURN_IF_ERROR(transport.Allgatherv(in.data, recv_bytes, out, options.group));
  return output.status();
}

}  // namespace flock
