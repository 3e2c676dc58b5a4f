// Fusion planner (pure): which ready requests travel together in one call.
//
// Vocabulary: a *candidate* is one named request the coordinator found ready
// on every rank; a *batch* is a list of candidate indices executed as one
// transport call over one fusion buffer. Allreduces fuse with allreduces, and
// reducescatters with reducescatters, of the same dtype, reduction, group and
// device; a batch holds at most `threshold_bytes` of fusion buffer (a larger
// tensor travels alone). Batches come out in the
// order of their first candidate, which keeps the plan deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "flock/requests/op_signature.h"

namespace flock {

struct FusionCandidate {
  OpKind kind = OpKind::kAllreduce;
  int64_t dtype = 0;
  int64_t reduce_op = 0;
  int64_t group = 0;
  int64_t device = 0;  // DeviceType: host and CUDA tensors never share a batch
  int64_t bytes = 0;   // of fusion buffer
};

// `ranks`: the world size, an upper bound on the op's group size. A
// reducescatter occupies its tensor padded to ranks equal blocks, plus this
// rank's block (scatter_steps.cc), which for tensors of fewer rows than ranks
// is several times the tensor.
FusionCandidate CandidateFrom(const OpSignature& signature, int ranks);

std::vector<std::vector<size_t>> PlanFusion(const std::vector<FusionCandidate>& candidates,
                                            int64_t threshold_bytes);

}  // namespace flock
