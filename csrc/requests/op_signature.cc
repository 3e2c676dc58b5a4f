#include "flock/requests/op_signature.h"

#include <algorithm>
#include <sstream>

namespace flock {
namespace {

int64_t HashString(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return static_cast<int64_t>(hash);
}

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

// The dims a signature holds (at most kSignatureMaxDims of them).
size_t StoredDims(const OpSignature& s) {
  return static_cast<size_t>(std::clamp<int64_t>(s.ndim, 0, kSignatureMaxDims));
}

std::string ShapeOf(const OpSignature& s) {
  std::vector<int64_t> dims(s.dims, s.dims + StoredDims(s));
  return ShapeToString(dims) + (s.ndim > kSignatureMaxDims ? "+" : "");
}

// One comparable field: how to read it and how to print a rank's value.
struct Field {
  const char* name;
  bool (*differs)(const OpSignature& a, const OpSignature& b, bool dim0_free);
  std::string (*show)(const OpSignature& s);
};

bool ShapeDiffers(const OpSignature& a, const OpSignature& b, bool dim0_free) {
  if (a.ndim != b.ndim || a.extra_dims_hash != b.extra_dims_hash) return true;
  for (int64_t d = dim0_free ? 1 : 0; d < std::min<int64_t>(a.ndim, kSignatureMaxDims); ++d) {
    if (a.dims[d] != b.dims[d]) return true;
  }
  return false;
}

const Field kFields[] = {
    {"op", [](const OpSignature& a, const OpSignature& b, bool) { return a.kind != b.kind; },
     [](const OpSignature& s) { return std::string(OpKindName(static_cast<OpKind>(s.kind))); }},
    {"tensor name",
     [](const OpSignature& a, const OpSignature& b, bool) { return a.name_hash != b.name_hash; },
     [](const OpSignature&) { return std::string("a different name"); }},
    {"dtype", [](const OpSignature& a, const OpSignature& b, bool) { return a.dtype != b.dtype; },
     [](const OpSignature& s) {
       return std::string(DataTypeName(static_cast<DataType>(s.dtype)));
     }},
    {"reduction op",
     [](const OpSignature& a, const OpSignature& b, bool) { return a.reduce_op != b.reduce_op; },
     [](const OpSignature& s) {
       return std::string(ReduceOpName(static_cast<ReduceOp>(s.reduce_op)));
     }},
    {"root rank", [](const OpSignature& a, const OpSignature& b, bool) { return a.root != b.root; },
     [](const OpSignature& s) { return std::to_string(s.root); }},
    {"device",
     [](const OpSignature& a, const OpSignature& b, bool) { return a.device != b.device; },
     [](const OpSignature& s) { return std::string(s.device == 0 ? "cpu" : "cuda"); }},
    {"group", [](const OpSignature& a, const OpSignature& b, bool) { return a.group != b.group; },
     [](const OpSignature& s) {
       return std::string(CommGroupName(static_cast<CommGroup>(s.group)));
     }},
    {"shape", ShapeDiffers, ShapeOf},
};

}  // namespace

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kAllreduce: return "allreduce";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kAllgather: return "allgather";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kNeighborAllreduce: return "neighbor_allreduce";
    case OpKind::kNeighborAllgather: return "neighbor_allgather";
    case OpKind::kHierarchicalNeighborAllreduce: return "hierarchical_neighbor_allreduce";
    case OpKind::kWinPut: return "win_put";
    case OpKind::kWinAccumulate: return "win_accumulate";
    case OpKind::kWinGet: return "win_get";
    case OpKind::kWinLock: return "win_mutex";
    case OpKind::kWinUnlock: return "win_mutex release";
    case OpKind::kReducescatter: return "reducescatter";
    case OpKind::kAlltoall: return "alltoall";
  }
  return "unknown op";
}

std::string NeighborMatchName(const OpRequest& request) {
  return request.auto_named ? std::string(OpKindName(request.kind)) + ".*" : request.name;
}

bool IsOpKind(int64_t value) {
  const bool before_windows = value >= static_cast<int64_t>(OpKind::kAllreduce) &&
                              value <= static_cast<int64_t>(OpKind::kHierarchicalNeighborAllreduce);
  return before_windows || value == static_cast<int64_t>(OpKind::kReducescatter) ||
         value == static_cast<int64_t>(OpKind::kAlltoall);
}

OpSignature MakeSignature(const OpRequest& request) {
  OpSignature s;
  s.kind = static_cast<int64_t>(request.kind);
  s.name_hash = HashString(request.name);
  s.local_error = static_cast<int64_t>(request.local_status.code());
  if (!request.local_status.ok()) return s;  // the tensor may be unusable
  s.dtype = static_cast<int64_t>(request.tensor.dtype);
  s.reduce_op = static_cast<int64_t>(request.reduce_op);
  s.root = request.root;
  s.device = static_cast<int64_t>(request.tensor.device.type);
  s.group = static_cast<int64_t>(request.group);
  s.ndim = static_cast<int64_t>(request.tensor.shape.size());
  uint64_t extra = 0;
  for (size_t d = 0; d < request.tensor.shape.size(); ++d) {
    if (d < kSignatureMaxDims) {
      s.dims[d] = request.tensor.shape[d];
    } else {
      extra = extra * 1000003u + static_cast<uint64_t>(request.tensor.shape[d]);
    }
  }
  s.extra_dims_hash = static_cast<int64_t>(extra);
  return s;
}

Status CheckSignature(const OpSignature& s) {
  auto bad = [](const char* field, int64_t value) {
    return Status::Internal(std::string(field) + " " + std::to_string(value) + " is not valid");
  };
  auto in_range = [](int64_t value, int count) { return value >= 0 && value < count; };
  if (!IsOpKind(s.kind)) return bad("op kind", s.kind);
  if (!in_range(s.local_error, kNumStatusCodes)) return bad("status code", s.local_error);
  if (!in_range(s.dtype, kNumDataTypes)) return bad("dtype", s.dtype);
  if (!in_range(s.reduce_op, kNumReduceOps)) return bad("reduction op", s.reduce_op);
  if (!in_range(s.device, 2)) return bad("device type", s.device);
  if (!in_range(s.group, kNumCommGroups)) return bad("group", s.group);
  if (s.ndim < 0) return bad("ndim", s.ndim);
  for (size_t d = StoredDims(s); d < kSignatureMaxDims; ++d) {  // an allgather reads dims[0]
    if (s.dims[d] != 0) return bad("unused dim", s.dims[d]);
  }
  if (!CheckedSizeBytes(static_cast<DataType>(s.dtype), s.dims, StoredDims(s))) {
    return Status::Internal("shape " + ShapeOf(s) + " has a negative dim or more than 2^63 bytes");
  }
  return Status::OK();
}

Status CompareSignatures(const OpRequest& request, const std::vector<OpSignature>& all,
                         int reference) {
  if (!request.local_status.ok()) {
    return Status(request.local_status.code(), std::string(OpKindName(request.kind)) + " '" +
                                                   request.name +
                                                   "': " + request.local_status.message());
  }
  return CompareSignatures(request.kind, request.name, all, reference);
}

Status CompareSignatures(OpKind kind, const std::string& name, const std::vector<OpSignature>& all,
                         int reference) {
  const std::string what = std::string(OpKindName(kind)) + " '" + name + "'";
  std::vector<int> rejected;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].local_error != 0) rejected.push_back(static_cast<int>(r));
  }
  if (!rejected.empty()) {
    return Status::Aborted(what + " was cancelled because " + RankList(rejected) +
                           " rejected its input (see the error raised there)");
  }
  const bool dim0_free = Dim0Free(kind);
  const OpSignature& ref = all[static_cast<size_t>(reference)];
  for (const Field& field : kFields) {
    std::vector<int> differing;
    for (size_t r = 0; r < all.size(); ++r) {
      if (field.differs(ref, all[r], dim0_free)) differing.push_back(static_cast<int>(r));
    }
    if (differing.empty()) continue;
    std::ostringstream msg;
    msg << what << ": ranks disagree on the " << field.name << ": rank " << reference << " has "
        << field.show(ref) << ", " << RankList(differing) << " "
        << (differing.size() == 1 ? "has " : "have ")
        << field.show(all[static_cast<size_t>(differing[0])]);
    if (field.differs == ShapeDiffers && dim0_free) msg << " (only dim 0 may differ)";
    return Status::Mismatch(msg.str());
  }
  return Status::OK();
}

int ReferenceRank(const std::vector<OpSignature>& all) {
  const OpSignature& first = all.front();
  const bool root_valid = first.root >= 0 && first.root < static_cast<int64_t>(all.size());
  if (first.kind == static_cast<int64_t>(OpKind::kBroadcast) && root_valid) {
    return static_cast<int>(first.root);
  }
  return 0;
}

Status AgreeOnRequest(Transport& transport, CommGroup group, const OpRequest& request,
                      int reference, std::vector<OpSignature>* all) {
  std::vector<OpSignature> gathered(static_cast<size_t>(transport.size(group)));
  const OpSignature mine = MakeSignature(request);
  FLOCK_RETURN_IF_ERROR(transport.Allgather(&mine, sizeof(mine), gathered.data(), group));
  for (size_t r = 0; r < gathered.size(); ++r) {
    const Status valid = CheckSignature(gathered[r]);
    if (!valid.ok()) {
      return Status::Internal(std::string(OpKindName(request.kind)) + " '" + request.name +
                              "': rank " + std::to_string(r) +
                              " sent a malformed signature: " + valid.message());
    }
  }
  FLOCK_RETURN_IF_ERROR(CompareSignatures(request, gathered, reference));
  if (all != nullptr) *all = std::move(gathered);
  return Status::OK();
}

}  // namespace flock
