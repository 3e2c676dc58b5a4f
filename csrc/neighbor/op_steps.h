// The exchange steps of each neighbor op (pure): ExchangeStep values built from
// the op's NeighborPlan (and, for the hierarchical op, the machine layout).
//
// hierarchical_neighbor_allreduce on machines of L ranks (rank = machine·L +
// local rank l), written as a composition and sharing the traffic between
// machines across the local ranks: the tensor is cut into L contiguous slices
// and local rank l looks after slice l.
//   1. local reduce-scatter: rank l sends slice j to local rank j and averages
//      what it receives for slice l -> the machine mean of slice l;
//   2. machine exchange: slice l goes to local rank l of each destination
//      machine and the machine-level weighted sum is formed there (the
//      NeighborPlan of the machine graph, peers mapped to local rank l);
//   3. local allgather: each rank sends its finished slice to every other
//      local rank and places the slices it receives.
// Per rank: sends (L-1)/L of the tensor in steps 1 and 3 each, and 1/L of it
// to each machine neighbour — the machine's inter-machine traffic is spread
// over its L ranks instead of funnelled through one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flock/neighbor/neighbor_plan.h"
#include "flock/requests/exchange_step.h"
#include "flock/requests/op_signature.h"

namespace flock {

// The step suffixes a call of `kind` goes through (a rejected call tells its
// peers about each, so none of its steps is waited for).
std::vector<std::string> StepSuffixes(OpKind kind);

// Slice j of `count` elements cut in `parts`: [SliceBegin(j), SliceBegin(j+1)).
int64_t SliceBegin(int64_t count, int parts, int j);

// One kReduce step over the whole tensor: a neighbor_allreduce.
ExchangeStep NeighborAllreduceStep(const NeighborPlan& plan, int64_t count,
                                   const std::vector<int64_t>& shape);

// One kGather step: a neighbor_allgather (`shape`: this rank's, 0-d as {1}).
ExchangeStep NeighborAllgatherStep(const NeighborPlan& plan, const std::vector<int64_t>& shape);

// The three steps above; `machine_plan` is in machine ranks.
std::vector<ExchangeStep> HierarchicalSteps(const NeighborPlan& machine_plan, int64_t count,
                                            int local_size, int local_rank, int machine_rank,
                                            bool check_between_machines);

}  // namespace flock
