// Structural and stochastic queries on a Graph (see analysis.h): sums of rows
// and columns of W, strong connectivity by a forward and a backward search from
// node 0, Bluefog's regularity and equivalence, and per-rank weight views.
#include "flock/topology/analysis.h"

#include <cmath>
#include <vector>

#include "check.h"

namespace flock {
namespace topology {

namespace {

// True when every row (rows == true) or every column of W sums to 1 within tol.
bool all_sum_to_one(const Graph& g, bool rows, double tol) {
  for (int i = 0; i < g.size(); ++i) {
    const auto& line = rows ? g.out_edges(i) : g.in_edges(i);
    double sum = 0.0;
    for (const auto& entry : line) sum += entry.second;
    if (std::abs(sum - 1.0) > tol) return false;
  }
  return true;
}

// Number of nodes reached from node 0 following out-edges (forward) or
// in-edges (backward).
int reached_from_zero(const Graph& g, bool forward) {
  std::vector<char> seen(static_cast<std::size_t>(g.size()), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  int count = 1;
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    for (const auto& entry : forward ? g.out_edges(node) : g.in_edges(node)) {
      if (seen[entry.first]) continue;
      seen[entry.first] = 1;
      ++count;
      stack.push_back(entry.first);
    }
  }
  return count;
}

// in-edges + out-edges; a self loop appears in both rows, so counts twice.
std::size_t total_degree(const Graph& g, int node) {
  return g.in_edges(node).size() + g.out_edges(node).size();
}

}  // namespace

bool is_row_stochastic(const Graph& g, double tol) {
  return all_sum_to_one(g, true, tol);
}

bool is_column_stochastic(const Graph& g, double tol) {
  return all_sum_to_one(g, false, tol);
}

bool is_doubly_stochastic(const Graph& g, double tol) {
  return is_row_stochastic(g, tol) && is_column_stochastic(g, tol);
}

bool is_strongly_connected(const Graph& g) {
  if (g.size() == 0) return false;
  return reached_from_zero(g, true) == g.size() && reached_from_zero(g, false) == g.size();
}

bool is_regular(const Graph& g) {
  for (int i = 1; i < g.size(); ++i) {
    if (total_degree(g, i) != total_degree(g, 0)) return false;
  }
  return true;
}

bool is_topology_equivalent(const Graph& a, const Graph& b, double tol) {
  if (a.size() != b.size() || a.num_edges() != b.num_edges()) return false;
  for (int i = 0; i < a.size(); ++i) {
    const auto& row_a = a.out_edges(i);
    const auto& row_b = b.out_edges(i);
    if (row_a.size() != row_b.size()) return false;
    for (auto it_a = row_a.begin(), it_b = row_b.begin(); it_a != row_a.end(); ++it_a, ++it_b) {
      if (it_a->first != it_b->first) return false;
      if (std::abs(it_a->second - it_b->second) > tol) return false;
    }
  }
  return true;
}

namespace {

RankWeights split_self(const EdgeRow& edges, int rank) {
  RankWeights result;
  for (const auto& entry : edges) {
    if (entry.first == rank) {
      result.self_weight = entry.second;
    } else {
      result.neighbor_weights.emplace(entry.first, entry.second);
    }
  }
  return result;
}

}  // namespace

RankWeights get_recv_weights(const Graph& g, int rank) {
  detail::check_node(rank, g.size(), "get_recv_weights(g, ", rank, ")");
  return split_self(g.in_edges(rank), rank);
}

RankWeights get_send_weights(const Graph& g, int rank) {
  detail::check_node(rank, g.size(), "get_send_weights(g, ", rank, ")");
  return split_self(g.out_edges(rank), rank);
}

}  // namespace topology
}  // namespace flock
