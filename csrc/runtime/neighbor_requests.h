// The neighbor ops' requests: a call's arguments resolved into exchange steps
// against this rank's topology and machine layout (set on the Runtime), ready
// for Engine::Submit. Shared by the Python bindings and C++ programs.
//
// A call this rank cannot make (bad weights, a non-float tensor, no topology)
// keeps the reason in op.local_status and lists in op.notify_on_reject the
// ranks it would have talked to: the engine fails it here and tells them, so
// they fail the same call instead of waiting. `named_ranks` are the ranks the
// caller's arguments name even when they could not all be read.
#pragma once

#include <optional>
#include <vector>

#include "flock/neighbor/neighbor_plan.h"
#include "flock/requests/op_signature.h"
#include "flock/runtime/runtime.h"

namespace flock {

// op.tensor is the input; the output has its shape. Weights: SEMANTICS of
// neighbor_allreduce (all unset: the static topology).
void PrepareNeighborAllreduce(Runtime& runtime, OpRequest& op, const NeighborWeights& weights,
                              bool check, const std::vector<int>& named_ranks = {});

// Static (both lists unset) or dynamic (both given) neighbor_allgather.
void PrepareNeighborAllgather(Runtime& runtime, OpRequest& op,
                              const std::optional<std::vector<int>>& src_ranks,
                              const std::optional<std::vector<int>>& dst_ranks, bool check,
                              const std::vector<int>& named_ranks = {});

// Weights keyed by machine (all unset: the machine topology).
void PrepareHierarchicalNeighborAllreduce(Runtime& runtime, OpRequest& op,
                                          const NeighborWeights& machine_weights, bool check,
                                          const std::vector<int>& named_machines = {});

}  // namespace flock
