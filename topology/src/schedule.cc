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
  StepWeights result;
  for (const auto& [sender, weight] : uniform_column(k, node)) {
    if (sender == node) {
      result.self_weight = weight;
    } else {
      result.src_weights.emplace(sender, weight);
    }
  }
  for (int destination : send_ranks(k, node)) result.dst_weights.emplace(destination, 1.0);
  return result;
}

EdgeRow DynamicSchedule::uniform_column(std::int64_t k, int node) const {
  const std::vector<int> sources = checked_recv_ranks(k, node);
  const double share = 1.0 / static_cast<double>(sources.size() + 1);
  EdgeRow column;
  column.reserve(sources.size() + 1);
  for (int source : sources) {
    if (source > node && (column.empty() || column.back().first < node)) {
      column.emplace_back(node, share);
    }
    column.emplace_back(source, share);
  }
  if (column.empty() || column.back().first < node) column.emplace_back(node, share);
  return column;
}

// From uniform_column, not weights() (a million nodes' maps took most of a
// second per step). Columns come sorted, so every row only grows at its end.
Graph DynamicSchedule::mixing_graph(std::int64_t k) const {
  if (k < 0) fail("mixing_graph(", k, "): iteration must be >= 0");
  Graph g(size(), /*weighted=*/true);
  for (int r = 0; r < size(); ++r) {
    for (const auto& [source, weight] : uniform_column(k, r)) g.add_edge(source, r, weight);
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
