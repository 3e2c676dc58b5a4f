// DynamicSchedule: the interface of every dynamic topology, a pure and
// deterministic rule that says, for iteration k and node r, to whom r sends and
// from whom r receives. Bluefog exposes these rules as Python generators that
// yield (send_ranks, recv_ranks) once per iteration; here the rule is a
// function of k, so any iteration can be asked directly and all nodes can be
// checked together.
//
// Vocabulary:
//   node       a rank, or a machine id for machine-level schedules
//              (Exp2DynamicMachine); size() is the number of nodes.
//   k          the iteration, k >= 0 (the generator's k-th yield).
//   sends(k, r) / recvs(k, r)
//              sorted node lists, r itself never included; may be empty.
//              For every schedule of this library and every k:
//              s in recv_ranks(k, r)  <=>  r in send_ranks(k, s).
//   uniform weights (the rule Bluefog's examples use, and flock's default):
//              r keeps self_weight = 1 / (|recvs| + 1) of its own value and
//              gives the same 1 / (|recvs| + 1) to each received value; every
//              sender scales by dst weight 1.0. Each step is then an average at
//              every receiver (column-stochastic mixing matrix).
//
// Argument errors (k < 0, node out of range) throw TopologyError.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "flock/topology/graph.h"

namespace flock {
namespace topology {

// The neighbor_allreduce arguments of one node at one iteration.
struct StepWeights {
  double self_weight = 1.0;
  std::map<int, double> src_weights;  // received node -> weight
  std::map<int, double> dst_weights;  // destination node -> weight (1.0)
};

class DynamicSchedule {
 public:
  virtual ~DynamicSchedule() = default;

  // Number of nodes the schedule speaks about.
  virtual int size() const = 0;
  virtual std::vector<int> send_ranks(std::int64_t k, int node) const = 0;
  virtual std::vector<int> recv_ranks(std::int64_t k, int node) const = 0;

  // recv_ranks(k, node), checked: sorted, in range, without node itself and
  // without repeats, else TopologyError naming the step, the node and the fault.
  // The uniform rule below needs such a list to give a column summing to 1.
  std::vector<int> checked_recv_ranks(std::int64_t k, int node) const;

  // Uniform weights for `node` at iteration k (see the file comment).
  StepWeights weights(std::int64_t k, int node) const;
  // The same weights as node's column of W: (sender, weight) for every source
  // and node itself, sorted by sender.
  EdgeRow uniform_column(std::int64_t k, int node) const;

  // The mixing graph of iteration k with uniform weights: W[s][r] = r's weight
  // for s, W[r][r] = r's self weight. Column-stochastic by construction.
  Graph mixing_graph(std::int64_t k) const;

 protected:
  // Throws TopologyError for k < 0 or node outside [0, size()).
  void check_step(const char* what, std::int64_t k, int node) const;
};

// Given, for every node s, the list of nodes s sends to, returns for every
// node r the sorted list of nodes that send to r (and vice versa: the relation
// is its own inverse). The all-ranks form of Bluefog's collective
// InferSourceFromDestinationRanks / InferDestinationFromSourceRanks.
// Throws on an out-of-range entry or a node listed twice in one list.
std::vector<std::vector<int>> transpose_rank_lists(const std::vector<std::vector<int>>& lists);

}  // namespace topology
}  // namespace flock
