// Graph: the weighted directed graph that every topology in flock is.
//
// Vocabulary (the same everywhere in flock):
//   node / rank   an integer in [0, size()); one process in a rank topology, one
//                 machine in a machine topology.
//   edge i -> j   i sends its value to j. Its weight W[i][j] is the factor j
//                 applies to i's value when it averages.
//   W             the size x size weight matrix; row i = what i sends, column j =
//                 what j receives. A column summing to 1 means j takes a convex
//                 combination of what it receives.
//   self loop     the edge i -> i; its weight W[i][i] is i's self weight.
//   in / out neighbours
//                 predecessors / successors of a node, self excluded, sorted
//                 ascending (Bluefog's in_neighbor_ranks / out_neighbor_ranks).
//   weighted      a flag carried with the graph (and saved in files): true when
//                 the weights are meant as mixing weights, false when only the
//                 edge set matters and the runtime should use uniform weights.
//                 Generators and from_dense/from_sparse set it; a new Graph(n)
//                 starts unweighted.
//
// An edge exists when it was added, whatever its weight (an explicit zero-weight
// edge is an edge, as in networkx). Weights must be finite and >= 0.
// Out-of-range nodes and invalid weights throw TopologyError (see errors.h).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/SparseCore>

namespace flock {
namespace topology {

struct Edge {
  int from = 0;
  int to = 0;
  double weight = 0.0;
};

// The edges at one node as (other end, weight), sorted ascending by the other
// end, the self loop included. A sorted vector, not a map: a million-node graph
// of degree 20 takes about 1 GB instead of 2.6 GB, and rows read in order.
using EdgeRow = std::vector<std::pair<int, double>>;

class Graph {
 public:
  // An empty graph (size 0): only a placeholder; analysis functions reject it.
  Graph() = default;
  // `size` isolated nodes (no edges, not even self loops). size >= 0.
  explicit Graph(int size, bool weighted = false);

  int size() const { return static_cast<int>(out_.size()); }
  bool is_weighted() const { return weighted_; }
  void set_weighted(bool weighted) { weighted_ = weighted; }

  // Adds the edge from -> to, or replaces its weight when it exists.
  void add_edge(int from, int to, double weight = 1.0);
  void set_self_weight(int node, double weight) { add_edge(node, node, weight); }
  // Returns whether the edge existed.
  bool remove_edge(int from, int to);

  bool has_edge(int from, int to) const;
  // W[from][to]; 0 when there is no such edge.
  double weight(int from, int to) const;
  // W[node][node]; 0 when node has no self loop.
  double self_weight(int node) const { return weight(node, node); }

  // Sorted ascending, self excluded.
  std::vector<int> in_neighbors(int node) const;
  std::vector<int> out_neighbors(int node) const;
  // Neighbour counts, self excluded.
  int in_degree(int node) const;
  int out_degree(int node) const;

  // Number of edges, self loops included.
  std::size_t num_edges() const;
  // Every edge, self loops included, sorted by (from, to).
  std::vector<Edge> edges() const;
  // Edges leaving / entering a node, keyed by the other end (self loop included).
  const EdgeRow& out_edges(int node) const;
  const EdgeRow& in_edges(int node) const;

  // Dense/sparse W. Zero-weight edges become zeros in the dense form and
  // explicitly stored zeros in the sparse form.
  Eigen::MatrixXd to_dense() const;
  Eigen::SparseMatrix<double> to_sparse() const;
  // One edge per nonzero entry (dense) or per stored entry (sparse, so explicit
  // zeros round-trip). The matrix must be square, finite and >= 0.
  static Graph from_dense(const Eigen::MatrixXd& w, bool weighted = true);
  static Graph from_sparse(const Eigen::SparseMatrix<double>& w, bool weighted = true);

 private:
  void check_node(const char* what, int node) const;

  std::vector<EdgeRow> out_;  // out_[i] holds (j, W[i][j])
  std::vector<EdgeRow> in_;   // in_[j] holds (i, W[i][j])
  bool weighted_ = false;
};

}  // namespace topology
}  // namespace flock
