// What every DynamicSchedule shares (see schedule.h): argument checks, the
// uniform weight rule, the mixing graph of one iteration, and the transposition
// of send lists into receive lists.
#include "flock/topology/schedule.h"

#include "check.h"

namespace flock {
namespace topology {

using detail::fail;

void DynamicSchedule::check_step(const char* what, std::int64_t k, int node) const {
  if (k < 0) fail(what, "(", k, ", ", node, "): iteration must be >= 0");
  detail::check_node(node, size(), what, "(", k, ", ", node, ")");
}

std::vector<int> DynamicSchedule::checked_recv_ranks(std::int64_t k, int node) const {
  std::vector<int> sources = recv_ranks(k, node);
  int previous = -1;
  for (int source : sources) {
    const char* fault = source < 0 || source >= size() ? "a node out of range"
                        : source == node               ? "the node itself"
                        : source <= previous           ? "a list not sorted or with a repeat"
                                                       : nullptr;
    if (fault != nullptr) {
      fail("step ", k, " of the schedule: node ", node, "'s receive list names ", source, " (",
           fault, "; a list must be sorted, in range, without the node itself or repeats)");
    }
    previous = source;
  }
  return sources;
}

StepWeights DynamicSchedule::weights(std::int64_t k, int node) const {
  check_step("weights", k, node);
  const std::vector<int> recvs = checked_recv_ranks(k, node);
  const double share = 1.0 / static_cast<double>(recvs.size() + 1);
  StepWeights result;
  result.self_weight = share;
  for (int source : recvs) result.src_weights.emplace(source, share);
  for (int destination : send_ranks(k, node)) result.dst_weights.emplace(destination, 1.0);
  return result;
}

// The weights() rule without its maps (a million nodes' maps took most of a
// second per step): r's column holds 1 / (receives + 1) for r and each source.
// Sources come sorted and the self loop goes in among them, so every row only
// grows at its end.
Graph DynamicSchedule::mixing_graph(std::int64_t k) const {
  if (k < 0) fail("mixing_graph(", k, "): iteration must be >= 0");
  Graph g(size(), /*weighted=*/true);
  for (int r = 0; r < size(); ++r) {
    const std::vector<int> sources = checked_recv_ranks(k, r);
    const double share = 1.0 / static_cast<double>(sources.size() + 1);
    bool self_added = false;
    for (int source : sources) {
      if (!self_added && source > r) {
        g.add_edge(r, r, share);
        self_added = true;
      }
      g.add_edge(source, r, share);
    }
    if (!self_added) g.add_edge(r, r, share);
  }
  return g;
}

std::vector<std::vector<int>> transpose_rank_lists(const std::vector<std::vector<int>>& lists) {
  const int n = static_cast<int>(lists.size());
  std::vector<std::vector<int>> transposed(lists.size());
  for (int s = 0; s < n; ++s) {
    for (int r : lists[s]) {
      detail::check_node(r, n, "transpose_rank_lists: list ", s);
      if (!transposed[r].empty() && transposed[r].back() == s) {
        fail("transpose_rank_lists: list ", s, " names node ", r, " twice");
      }
      // s grows monotonically, so every transposed list stays sorted.
      transposed[r].push_back(s);
    }
  }
  return transposed;
}

}  // namespace topology
}  // namespace flock
