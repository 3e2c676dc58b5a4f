// Global collectives over a Transport: allreduce, broadcast and allgather of
// one tensor over a group of ranks. Each first agrees on the request with
// every rank of the group (requests/op_signature.h) and then runs one
// transport call, on the calling thread. For programs that use a Transport
// without a Runtime: once a Runtime runs, its engine thread is the one thread
// that talks to MPI, and C++ code uses runtime/collectives.h (the same
// functions taking the Runtime, through the engine). The engine's executor
// uses PlanGather.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/transport/transport.h"

namespace flock {

struct AllreduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  CommGroup group = CommGroup::kWorld;
  std::string name;
};

// output = reduction of every rank's input (same shape and dtype as input;
// output may be the input for an in-place reduction).
Status Allreduce(Transport& transport, const TensorView& input, const TensorView& output,
                 const AllreduceOptions& options, Status local_status = Status::OK());

struct BroadcastOptions {
  int root = 0;  // a rank of `group`
  CommGroup group = CommGroup::kWorld;
  std::string name;
};

// tensor = root's tensor, in place.
Status Broadcast(Transport& transport, const TensorView& tensor, const BroadcastOptions& options,
                 Status local_status = Status::OK());

struct AllgatherOptions {
  CommGroup group = CommGroup::kWorld;
  std::string name;
};

// Makes the output once its shape is known (dim 0 = the sum over ranks).
using OutputAllocator = std::function<Result<TensorView>(const std::vector<int64_t>& shape)>;

// Where an allgather's rows go: the output shape (dim 0 = the sum of every
// rank's dim 0) and the bytes each rank contributes. `shape` is this rank's
// input shape with at least one dim; the other dims are the same everywhere.
// `first_dims` come from other ranks: a negative one, or an output of more than
// 2^63 bytes, is an error (the same on every rank, which all plan alike).
struct GatherLayout {
  std::vector<int64_t> output_shape;
  std::vector<int64_t> recv_bytes;  // per rank of the group
  int64_t total_bytes = 0;
};
Result<GatherLayout> PlanGather(DataType dtype, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& first_dims);

// Concatenates every rank's input along dim 0, in rank order. Dim 0 may differ
// between ranks; the other dims may not. A 0-d input counts as shape [1].
Status Allgather(Transport& transport, const TensorView& input, const OutputAllocator& allocate,
                 const AllgatherOptions& options, Status local_status = Status::OK());

}  // namespace flock
