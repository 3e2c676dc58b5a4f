// Graph: storage and conversions. W is kept twice, as per-node sorted rows of
// outgoing edges (out_[i] holds (j, W[i][j])) and of incoming edges (in_[j]
// holds (i, W[i][j])), so that both neighbour lists come out sorted in
// O(degree). Every mutation goes through add_edge/remove_edge, which keep the
// two equal. Generators add edges in ascending order, so adding is mostly an
// append; an insertion elsewhere costs O(degree).
#include "flock/topology/graph.h"

#include <algorithm>

#include "check.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

// Where key is, or would go, in a sorted row.
template <typename Row>
auto position_in(Row& row, int key) {
  return std::lower_bound(row.begin(), row.end(), key,
                          [](const auto& entry, int k) { return entry.first < k; });
}

EdgeRow::const_iterator find_in(const EdgeRow& row, int key) {
  const auto it = position_in(row, key);
  return it != row.end() && it->first == key ? it : row.end();
}

bool contains(const EdgeRow& row, int key) {
  return find_in(row, key) != row.end();
}

void set_in(EdgeRow& row, int key, double weight) {
  if (row.empty() || row.back().first < key) {  // the common case: in order
    row.emplace_back(key, weight);
    return;
  }
  const auto it = position_in(row, key);
  if (it != row.end() && it->first == key) {
    it->second = weight;
  } else {
    row.emplace(it, key, weight);
  }
}

bool erase_in(EdgeRow& row, int key) {
  const auto it = find_in(row, key);
  if (it == row.end()) return false;
  row.erase(it);
  return true;
}

}  // namespace

Graph::Graph(int size, bool weighted) : weighted_(weighted) {
  if (size < 0) fail("Graph(", size, "): size must be >= 0");
  out_.resize(static_cast<std::size_t>(size));
  in_.resize(static_cast<std::size_t>(size));
}

void Graph::check_node(const char* what, int node) const {
  detail::check_node(node, size(), what, "(", node, ")");
}

void Graph::add_edge(int from, int to, double weight) {
  detail::check_node(from, size(), "add_edge(", from, ", ", to, ")");
  detail::check_node(to, size(), "add_edge(", from, ", ", to, ")");
  detail::check_weight(weight, "add_edge(", from, ", ", to, ")");
  set_in(out_[from], to, weight);
  set_in(in_[to], from, weight);
}

bool Graph::remove_edge(int from, int to) {
  detail::check_node(from, size(), "remove_edge(", from, ", ", to, ")");
  detail::check_node(to, size(), "remove_edge(", from, ", ", to, ")");
  erase_in(in_[to], from);
  return erase_in(out_[from], to);
}

bool Graph::has_edge(int from, int to) const {
  if (from < 0 || from >= size() || to < 0 || to >= size()) return false;
  return contains(out_[from], to);
}

double Graph::weight(int from, int to) const {
  detail::check_node(from, size(), "weight(", from, ", ", to, ")");
  detail::check_node(to, size(), "weight(", from, ", ", to, ")");
  const auto it = find_in(out_[from], to);
  return it == out_[from].end() ? 0.0 : it->second;
}

namespace {

// Keys of `edges` without `self`, ascending (rows are kept sorted).
std::vector<int> keys_without(const EdgeRow& edges, int self) {
  std::vector<int> keys;
  keys.reserve(edges.size());
  for (const auto& entry : edges) {
    if (entry.first != self) keys.push_back(entry.first);
  }
  return keys;
}

}  // namespace

std::vector<int> Graph::in_neighbors(int node) const {
  check_node("in_neighbors", node);
  return keys_without(in_[node], node);
}

std::vector<int> Graph::out_neighbors(int node) const {
  check_node("out_neighbors", node);
  return keys_without(out_[node], node);
}

int Graph::in_degree(int node) const {
  check_node("in_degree", node);
  return static_cast<int>(in_[node].size() - contains(in_[node], node));
}

int Graph::out_degree(int node) const {
  check_node("out_degree", node);
  return static_cast<int>(out_[node].size() - contains(out_[node], node));
}

std::size_t Graph::num_edges() const {
  std::size_t count = 0;
  for (const auto& row : out_) count += row.size();
  return count;
}

std::vector<Edge> Graph::edges() const {
  std::vector<Edge> all;
  all.reserve(num_edges());
  for (int i = 0; i < size(); ++i) {
    for (const auto& entry : out_[i]) all.push_back(Edge{i, entry.first, entry.second});
  }
  return all;
}

const EdgeRow& Graph::out_edges(int node) const {
  check_node("out_edges", node);
  return out_[node];
}

const EdgeRow& Graph::in_edges(int node) const {
  check_node("in_edges", node);
  return in_[node];
}

Eigen::MatrixXd Graph::to_dense() const {
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(size(), size());
  for (const Edge& e : edges()) w(e.from, e.to) = e.weight;
  return w;
}

Eigen::SparseMatrix<double> Graph::to_sparse() const {
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(num_edges());
  for (const Edge& e : edges()) triplets.emplace_back(e.from, e.to, e.weight);
  Eigen::SparseMatrix<double> w(size(), size());
  w.setFromTriplets(triplets.begin(), triplets.end());
  return w;
}

Graph Graph::from_dense(const Eigen::MatrixXd& w, bool weighted) {
  if (w.rows() != w.cols()) {
    fail("from_dense: matrix is ", w.rows(), " x ", w.cols(), ", not square");
  }
  Graph g(static_cast<int>(w.rows()), weighted);
  for (int i = 0; i < g.size(); ++i) {
    for (int j = 0; j < g.size(); ++j) {
      const double value = w(i, j);
      detail::check_weight(value, "from_dense: entry (", i, ", ", j, ")");
      if (value != 0.0) g.add_edge(i, j, value);
    }
  }
  return g;
}

Graph Graph::from_sparse(const Eigen::SparseMatrix<double>& w, bool weighted) {
  if (w.rows() != w.cols()) {
    fail("from_sparse: matrix is ", w.rows(), " x ", w.cols(), ", not square");
  }
  Graph g(static_cast<int>(w.rows()), weighted);
  for (int outer = 0; outer < w.outerSize(); ++outer) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(w, outer); it; ++it) {
      const int i = static_cast<int>(it.row());
      const int j = static_cast<int>(it.col());
      detail::check_weight(it.value(), "from_sparse: entry (", i, ", ", j, ")");
      g.add_edge(i, j, it.value());
    }
  }
  return g;
}

}  // namespace topology
}  // namespace flock
