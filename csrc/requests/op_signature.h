// OpSignature: what every rank must agree on before a global collective runs,
// and the check that reports any disagreement identically on every rank.
//
// Each rank describes its request (op kind, name, dtype, reduction, root,
// device, shape, and whether its input was already rejected locally) as a
// fixed-size record; the records are all-gathered and compared field by field
// against a reference rank. A mismatch fails the op on every rank with a
// message naming the tensor, the field and the ranks that differ, instead of
// letting MPI hang or mix bytes. (The engine's coordinator replaces this
// per-call exchange with negotiation and a response cache.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/requests/exchange_step.h"
#include "flock/requests/window_call.h"
#include "flock/transport/gpu_backend.h"
#include "flock/transport/transport.h"

namespace flock {

enum class OpKind : int64_t {
  kAllreduce = 1,
  kBroadcast = 2,
  kAllgather = 3,
  kBarrier = 4,
  kNeighborAllreduce = 5,  // neighbor ops bypass the coordinator (see neighbor/)
  kNeighborAllgather = 6,
  kHierarchicalNeighborAllreduce = 7,
  // Window ops (window/): one-sided, never negotiated, never announced.
  kWinPut = 8,
  kWinAccumulate = 9,
  kWinGet = 10,
  kWinLock = 11,    // win_mutex on other ranks: their slots for this rank, in rank order
  kWinUnlock = 12,  // ... and their release
  // Global collectives added after the window ops (the values travel on the wire).
  kReducescatter = 13,
  kAlltoall = 14,
};
inline bool IsNeighborOp(OpKind kind) {
  return kind == OpKind::kNeighborAllreduce || kind == OpKind::kNeighborAllgather ||
         kind == OpKind::kHierarchicalNeighborAllreduce;
}
inline bool IsWindowOp(OpKind kind) {
  return kind >= OpKind::kWinPut && kind <= OpKind::kWinUnlock;
}
// Ops whose ranks may differ in dim 0 (the gathers); their signatures are not
// cached, as they differ between ranks.
inline bool Dim0Free(OpKind kind) {
  return kind == OpKind::kAllgather || kind == OpKind::kNeighborAllgather ||
         kind == OpKind::kAlltoall;
}
// Ops the coordinator may fuse into one transport call with others of their kind.
inline bool Fusable(OpKind kind) {
  return kind == OpKind::kAllreduce || kind == OpKind::kReducescatter;
}
const char* OpKindName(OpKind kind);
bool IsOpKind(int64_t value);

constexpr int kSignatureMaxDims = 8;

struct OpSignature {
  int64_t kind = 0;
  int64_t name_hash = 0;
  int64_t local_error = 0;  // StatusCode of a rejection on this rank, 0 if none
  int64_t dtype = 0;
  int64_t reduce_op = 0;
  int64_t root = 0;
  int64_t device = 0;
  int64_t group = 0;  // CommGroup the op runs over
  int64_t ndim = 0;
  int64_t dims[kSignatureMaxDims] = {};
  int64_t extra_dims_hash = 0;  // dims past kSignatureMaxDims
};

struct OpRequest {
  OpKind kind = OpKind::kAllreduce;
  std::string name;
  TensorView tensor;
  ReduceOp reduce_op = ReduceOp::kSum;
  int root = 0;
  CommGroup group = CommGroup::kWorld;
  Status local_status;  // rejection found on this rank before negotiating
  // Neighbor ops: the exchange steps to run (null for global ops) and, when
  // the call was rejected here, the ranks to tell so they do not wait.
  std::shared_ptr<const std::vector<ExchangeStep>> steps;
  std::vector<int> notify_on_reject;
  // Window ops: the window, peers and weights (requests/window_call.h).
  std::shared_ptr<const WindowCall> window;
  // Matched by the number of earlier unnamed calls of this op, not by name.
  bool auto_named = false;
  // Alltoall: the rows of dim 0 sent to each rank of the group, in rank order.
  std::vector<int64_t> splits;
  // CUDA tensors: where the caller's stream was when it submitted (the inputs
  // are ready once the GPU gets there).
  GpuEventPtr ready;
};

inline OpRequest MakeRequest(OpKind kind, std::string name, const TensorView& tensor) {
  OpRequest request;
  request.kind = kind;
  request.name = std::move(name);
  request.tensor = tensor;
  return request;
}

OpSignature MakeSignature(const OpRequest& request);

// How a neighbor op's calls meet their peers' (NeighborExchange): by name, or
// for unnamed calls by "<op>.*" and the number of earlier unnamed calls.
std::string NeighborMatchName(const OpRequest& request);

// A signature received from another rank: OK when every field holds a value
// MakeSignature can produce (known op, dtype, reduction, device and group,
// dims >= 0 and 0 past ndim, a byte size that fits int64); else names the
// first one that does not.
Status CheckSignature(const OpSignature& signature);

// Compares all ranks' signatures; returns a Mismatch (or the local rejection)
// that is the same on every rank. `reference` is the rank others are held to.
Status CompareSignatures(const OpRequest& request, const std::vector<OpSignature>& all,
                         int reference);

// The same comparison made by a coordinator that only has the signatures: the
// op and name come from the caller, and a rank's local rejection is reported
// as a cancellation (the rejecting rank substitutes its own message).
Status CompareSignatures(OpKind kind, const std::string& name, const std::vector<OpSignature>& all,
                         int reference);

// The rank the others are held to: the root for a broadcast whose root is
// valid on rank 0, else rank 0.
int ReferenceRank(const std::vector<OpSignature>& all);

// Exchanges signatures over `group` and compares them. On success, fills
// `all` (when non-null) with every rank's signature (allgather needs dim 0).
Status AgreeOnRequest(Transport& transport, CommGroup group, const OpRequest& request,
                      int reference, std::vector<OpSignature>* all);

}  // namespace flock
