// Blocking global collectives for C++ programs: allreduce, broadcast,
// allgather, reducescatter and alltoall of one tensor, submitted to the runtime's engine like every
// op from Python, and waited for. The engine thread is the one thread that talks to MPI while flock
// runs (no MPI call from user threads), so these may be called from any thread, also while neighbor
// ops of other threads are in flight; they are negotiated, checked for mismatches between ranks (an
// error naming the tensor, the field and the ranks, on every rank) and fused like the Python ops.
// Unnamed requests are named "<op>.<n>" (the n-th of that op on this rank), so every rank must make
// them in the same order.
//
// (collectives/collectives.h keeps the transport-level versions, for programs
// that use a Transport without starting a Runtime.)
#pragma once

#include "flock/collectives/collectives.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/runtime/runtime.h"

namespace flock {

// output = reduction of every rank's input (same shape and dtype; may be the input).
// `local_status` not OK: this rank refuses the op; every rank's call fails.
Status Allreduce(Runtime& runtime, const TensorView& input, const TensorView& output,
                 const AllreduceOptions& options, Status local_status = Status::OK());

// tensor = root's tensor, in place.
Status Broadcast(Runtime& runtime, const TensorView& tensor, const BroadcastOptions& options,
                 Status local_status = Status::OK());

// Every rank's input concatenated along dim 0 in rank order (dim 0 may differ
// between ranks, the other dims may not); `allocate` makes the output once its
// shape is known, and is not called when the op fails.
Status Allgather(Runtime& runtime, const TensorView& input, const OutputAllocator& allocate,
                 const AllgatherOptions& options, Status local_status = Status::OK());

struct ReducescatterOptions {
  ReduceOp op = ReduceOp::kAverage;
  CommGroup group = CommGroup::kWorld;
  std::string name;
};

// output = this rank's rows of the reduction of every rank's input (same shape
// everywhere): dim 0 split as evenly as possible, the first ranks one row more
// (ReducescatterShape in collectives/scatter_layout.h gives the output shape).
Status Reducescatter(Runtime& runtime, const TensorView& input, const TensorView& output,
                     const ReducescatterOptions& options, Status local_status = Status::OK());

struct AlltoallOptions {
  std::vector<int64_t> splits;  // rows of dim 0 sent to each rank; empty: an even split
  CommGroup group = CommGroup::kWorld;
  std::string name;
};

// Sends rank r the rows splits[r] (in order along dim 0) and concatenates the
// rows received, in rank order; `allocate` makes the output once its shape is
// known. `received_splits` (if not null) gets the rows that came from each rank.
Status Alltoall(Runtime& runtime, const TensorView& input, const OutputAllocator& allocate,
                const AlltoallOptions& options, std::vector<int64_t>* received_splits = nullptr,
                Status local_status = Status::OK());

}  // namespace flock
