#include "flock/engine/fusion_planner.h"

#include <limits>
#include <map>
#include <tuple>

#include "flock/common/data_type.h"

namespace flock {

FusionCandidate CandidateFrom(const OpSignature& s, int ranks) {
  FusionCandidate c;
  c.kind = static_cast<OpKind>(s.kind);
  c.dtype = s.dtype;
  c.reduce_op = s.reduce_op;
  c.group = s.group;
  c.device = s.device;
  int64_t elements = 1;
  for (int64_t d = 0; d < std::min<int64_t>(s.ndim, kSignatureMaxDims); ++d) elements *= s.dims[d];
  c.bytes = elements * static_cast<int64_t>(DataTypeSize(static_cast<DataType>(s.dtype)));
  if (c.kind == OpKind::kReducescatter && c.bytes > std::numeric_limits<int64_t>::max() / 4) {
    c.bytes = std::numeric_limits<int64_t>::max();  // travels alone; no padded size overflows
  } else if (c.kind == OpKind::kReducescatter && s.ndim > 0 && s.dims[0] > 0) {
    const int64_t row = c.bytes / s.dims[0];
    const int64_t most_rows = (s.dims[0] + ranks - 1) / ranks;
    c.bytes = (ranks + 1) * most_rows * row;  // padded blocks and this rank's block
  }
  return c;
}

std::vector<std::vector<size_t>> PlanFusion(const std::vector<FusionCandidate>& candidates,
                                            int64_t threshold_bytes) {
  // kind, dtype, reduction, group, device
  using Key = std::tuple<OpKind, int64_t, int64_t, int64_t, int64_t>;
  std::vector<std::vector<size_t>> batches;
  std::vector<int64_t> batch_bytes;
  std::map<Key, size_t> open;  // key -> index of the batch still accepting tensors
  for (size_t i = 0; i < candidates.size(); ++i) {
    const FusionCandidate& c = candidates[i];
    if (!Fusable(c.kind) || c.bytes >= threshold_bytes) {
      batches.push_back({i});  // unfusable, or as large as a whole buffer
      batch_bytes.push_back(c.bytes);
      continue;
    }
    const Key key{c.kind, c.dtype, c.reduce_op, c.group, c.device};
    auto it = open.find(key);
    // batch_bytes <= threshold_bytes, so this cannot overflow as a sum could.
    if (it != open.end() && c.bytes <= threshold_bytes - batch_bytes[it->second]) {
      batches[it->second].push_back(i);
      batch_bytes[it->second] += c.bytes;
      continue;
    }
    open[key] = batches.size();  // start a new batch; the full one stays closed
    batches.push_back({i});
    batch_bytes.push_back(c.bytes);
  }
  return batches;
}

}  // namespace flock
