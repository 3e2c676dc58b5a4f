// NeighborPlan: who a neighbor op on this rank sends to and receives from, and
// with which weights — a pure function of the call's arguments and the static
// topology, resolved before the request reaches the engine.
//
// Weights (Bluefog's convention, i = this rank):
//   out_i = self_weight·x_i + Σ_{j ∈ recvs} weight_j · (scale_{j→i} · x_j)
// where scale is the sender's dst weight (1.0 for the static topology). The
// sender ships x_j unscaled and announces scale_{j→i}; the receiver applies
// weight_j·scale_{j→i} while accumulating, so no scaled copy is ever made.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "flock/common/status.h"

namespace flock {

namespace topology {
class Graph;
}  // namespace topology

struct NeighborSend {
  int peer = 0;
  double scale = 1.0;
};

struct NeighborRecv {
  int peer = 0;
  double weight = 1.0;
};

struct NeighborPlan {
  bool reduce = true;  // weighted sum (neighbor_allreduce) or concatenation (allgather)
  double self_weight = 1.0;
  std::vector<NeighborSend> sends;  // ascending peers
  std::vector<NeighborRecv> recvs;  // ascending peers (allgather: output order)
  bool check = false;               // receivers confirm to senders (enable_topo_check)
  bool dynamic = false;             // the call named its peers (not the static topology)
};

// The caller's weight arguments, None as nullopt; maps as (rank, weight) pairs.
struct NeighborWeights {
  std::optional<double> self_weight;
  std::optional<std::vector<std::pair<int, double>>> src_weights;
  std::optional<std::vector<std::pair<int, double>>> dst_weights;
};

// How errors name the arguments and nodes: ranks by default, machines for
// the machine level of hierarchical_neighbor_allreduce.
struct NeighborArgNames {
  const char* node = "rank";
  const char* src_weights = "src_weights";
  const char* dst_weights = "dst_weights";
  const char* setter = "set_topology()";
};
NeighborArgNames MachineArgNames();

// neighbor_allreduce: `graph` is the static topology (null when none is set);
// its weighted flag chooses topology weights over uniform ones.
Result<NeighborPlan> PlanNeighborAllreduce(const topology::Graph* graph, int rank, int size,
                                           const NeighborWeights& weights, bool check,
                                           const NeighborArgNames& names = {});

// neighbor_allgather: static (both lists empty optionals) or dynamic (both given);
// `check`: receivers confirm to senders (enable_topo_check).
Result<NeighborPlan> PlanNeighborAllgather(const topology::Graph* graph, int rank, int size,
                                           const std::optional<std::vector<int>>& src_ranks,
                                           const std::optional<std::vector<int>>& dst_ranks,
                                           bool check);

// The ranks a call rejected on this rank should tell, so they fail instead of
// waiting: its static neighbours plus every valid rank its arguments name.
std::vector<int> PeersOfRejectedCall(const topology::Graph* graph, int rank, int size,
                                     const std::vector<int>& named_ranks);

}  // namespace flock
