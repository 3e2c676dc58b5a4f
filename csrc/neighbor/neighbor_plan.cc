#include "flock/neighbor/neighbor_plan.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "flock/topology/graph.h"

namespace flock {
namespace {

Status CheckPeer(const char* what, int peer, int rank, int size, const char* node = "rank") {
  const std::string n = node;
  if (peer < 0 || peer >= size) {
    return Status::InvalidArgument(std::string(what) + " names " + n + " " + std::to_string(peer) +
                                   ", out of range for " + std::to_string(size) + " " + n + "s");
  }
  if (peer == rank) {
    return Status::InvalidArgument(std::string(what) + " names this " + n + " (" +
                                   std::to_string(rank) +
                                   "); its own value is weighted by self_weight");
  }
  return Status::OK();
}

Status CheckWeight(const char* what, double w) {
  if (!std::isfinite(w)) {
    return Status::InvalidArgument(std::string(what) + " must be finite, got " + std::to_string(w));
  }
  return Status::OK();
}

// Validated, sorted, without duplicates.
Result<std::vector<std::pair<int, double>>> CheckedWeights(
    const char* what, const std::vector<std::pair<int, double>>& weights, int rank, int size,
    const char* node = "rank") {
  std::vector<std::pair<int, double>> sorted = weights;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    FLOCK_RETURN_IF_ERROR(CheckPeer(what, sorted[i].first, rank, size, node));
    FLOCK_RETURN_IF_ERROR(CheckWeight(what, sorted[i].second));
    if (i > 0 && sorted[i].first == sorted[i - 1].first) {
      return Status::InvalidArgument(std::string(what) + " names " + node + " " +
                                     std::to_string(sorted[i].first) + " twice");
    }
  }
  return sorted;
}

Status NeedTopology(const topology::Graph* graph, int size, const NeighborArgNames& names = {}) {
  if (graph == nullptr) {
    return Status::InvalidArgument(std::string("no topology is set: call ") + names.setter +
                                   " or pass the peers (" + names.dst_weights + ")");
  }
  if (graph->size() != size) {
    return Status::Internal("the topology has " + std::to_string(graph->size()) + " nodes for " +
                            std::to_string(size) + " ranks");
  }
  return Status::OK();
}

std::vector<NeighborSend> StaticSends(const topology::Graph& graph, int rank) {
  const std::vector<int> peers = graph.out_neighbors(rank);
  std::vector<NeighborSend> sends;
  sends.reserve(peers.size());
  for (int peer : peers) sends.push_back({peer, 1.0});
  return sends;
}

}  // namespace

NeighborArgNames MachineArgNames() {
  return NeighborArgNames{"machine", "src_machine_weights", "dst_machine_weights",
                          "set_machine_topology()"};
}

namespace {

// dst_weights given: the call names every peer (a dynamic topology).
Result<NeighborPlan> PlanDynamic(NeighborPlan plan, int rank, int size,
                                 const NeighborWeights& weights, const NeighborArgNames& names) {
  if (!weights.self_weight) {
    return Status::InvalidArgument(std::string(names.dst_weights) +
                                   " (a dynamic topology) needs self_weight and " +
                                   names.src_weights + " too");
  }
  FLOCK_ASSIGN_OR_RETURN(
      auto dst, CheckedWeights(names.dst_weights, *weights.dst_weights, rank, size, names.node));
  FLOCK_ASSIGN_OR_RETURN(
      auto src, CheckedWeights(names.src_weights, *weights.src_weights, rank, size, names.node));
  plan.dynamic = true;
  plan.self_weight = *weights.self_weight;
  for (auto& [peer, w] : dst) plan.sends.push_back({peer, w});
  for (auto& [peer, w] : src) plan.recvs.push_back({peer, w});
  return plan;
}

// The topology's peers with the caller's weights; an unlisted in-neighbour is
// still received from (its data is expected), with weight 0.
Result<NeighborPlan> PlanStaticWeighted(NeighborPlan plan, int rank, int size,
                                        const std::vector<int>& in, const NeighborWeights& weights,
                                        const NeighborArgNames& names) {
  const char* node = names.node;
  FLOCK_ASSIGN_OR_RETURN(auto src,
                         CheckedWeights(names.src_weights, *weights.src_weights, rank, size, node));
  for (auto& [peer, w] : src) {
    if (!std::binary_search(in.begin(), in.end(), peer)) {
      return Status::InvalidArgument(std::string(names.src_weights) + " names " + node + " " +
                                     std::to_string(peer) + ", which is not an in-neighbour of " +
                                     node + " " + std::to_string(rank) + " in the topology (pass " +
                                     names.dst_weights + " too for a dynamic topology)");
    }
  }
  plan.self_weight = *weights.self_weight;
  for (int peer : in) {
    auto it = std::find_if(src.begin(), src.end(), [&](auto& e) { return e.first == peer; });
    plan.recvs.push_back({peer, it == src.end() ? 0.0 : it->second});
  }
  return plan;
}

}  // namespace

Result<NeighborPlan> PlanNeighborAllreduce(const topology::Graph* graph, int rank, int size,
                                           const NeighborWeights& weights, bool check,
                                           const NeighborArgNames& names) {
  NeighborPlan plan;
  plan.check = check;
  if (weights.self_weight.has_value() != weights.src_weights.has_value()) {
    return Status::InvalidArgument(std::string("self_weight and ") + names.src_weights +
                                   " must be given together (or neither, for the topology's "
                                   "weights)");
  }
  if (weights.self_weight) FLOCK_RETURN_IF_ERROR(CheckWeight("self_weight", *weights.self_weight));
  if (weights.dst_weights) return PlanDynamic(std::move(plan), rank, size, weights, names);

  FLOCK_RETURN_IF_ERROR(NeedTopology(graph, size, names));
  plan.sends = StaticSends(*graph, rank);
  const std::vector<int> in = graph->in_neighbors(rank);
  plan.recvs.reserve(in.size());
  if (weights.self_weight)
    return PlanStaticWeighted(std::move(plan), rank, size, in, weights, names);
  if (graph->is_weighted()) {  // the topology's own weights
    plan.self_weight = graph->self_weight(rank);
    for (int peer : in) plan.recvs.push_back({peer, graph->weight(peer, rank)});
  } else {
    const double uniform = 1.0 / static_cast<double>(in.size() + 1);
    plan.self_weight = uniform;
    for (int peer : in) plan.recvs.push_back({peer, uniform});
  }
  return plan;
}

Result<NeighborPlan> PlanNeighborAllgather(const topology::Graph* graph, int rank, int size,
                                           const std::optional<std::vector<int>>& src_ranks,
                                           const std::optional<std::vector<int>>& dst_ranks,
                                           bool check) {
  NeighborPlan plan;
  plan.check = check;
  plan.reduce = false;
  plan.self_weight = 0.0;
  if (src_ranks.has_value() != dst_ranks.has_value()) {
    return Status::InvalidArgument(
        "src_ranks and dst_ranks must be given together (or neither, for the topology)");
  }
  if (src_ranks) {
    plan.dynamic = true;
    std::set<int> seen;
    for (int peer : *src_ranks) {
      FLOCK_RETURN_IF_ERROR(CheckPeer("src_ranks", peer, rank, size));
      if (!seen.insert(peer).second)
        return Status::InvalidArgument("src_ranks names rank " + std::to_string(peer) + " twice");
      plan.recvs.push_back({peer, 1.0});  // the caller's order is the output order
    }
    seen.clear();
    for (int peer : *dst_ranks) {
      FLOCK_RETURN_IF_ERROR(CheckPeer("dst_ranks", peer, rank, size));
      if (!seen.insert(peer).second)
        return Status::InvalidArgument("dst_ranks names rank " + std::to_string(peer) + " twice");
    }
    for (int peer : seen) plan.sends.push_back({peer, 1.0});
    return plan;
  }
  FLOCK_RETURN_IF_ERROR(NeedTopology(
      graph, size, {"rank", "src_ranks", "src_ranks and dst_ranks", "set_topology()"}));
  plan.sends = StaticSends(*graph, rank);
  for (int peer : graph->in_neighbors(rank)) plan.recvs.push_back({peer, 1.0});
  return plan;
}

std::vector<int> PeersOfRejectedCall(const topology::Graph* graph, int rank, int size,
                                     const std::vector<int>& named_ranks) {
  std::set<int> peers;
  if (graph != nullptr && graph->size() == size) {
    for (int p : graph->in_neighbors(rank)) peers.insert(p);
    for (int p : graph->out_neighbors(rank)) peers.insert(p);
  }
  for (int p : named_ranks) {
    if (p >= 0 && p < size && p != rank) peers.insert(p);
  }
  return {peers.begin(), peers.end()};
}

}  // namespace flock
