// DynamicOnePeer: Bluefog's GetDynamicOnePeerSendRecvRanks. Each iteration
// every rank sends to exactly one of its out-neighbours in a static graph,
// taking them in turn; a rank receives from whoever picked it.
//
// Vocabulary:
//   clockwise distance of j from r   (j - r) mod n, as if ranks sat on a clock.
//   turn list of r                   r's out-neighbours (self excluded) sorted
//                                    by clockwise distance.
//   pick(k, r)                       entry k mod outdeg(r) of r's turn list.
// At iteration k rank r sends to pick(k, r) and receives from every s != r
// with pick(k, s) == r (0 to n-1 ranks, ascending).
//
// On ExponentialTwoGraph(2^m) every rank sends to r + 2^(k mod m) and receives
// from r - 2^(k mod m); with uniform weights (1/2, 1/2) m consecutive steps give
// the exact average.
//
// Differences from Bluefog, which divides by zero there: a rank without
// out-neighbours sends nothing, and a graph of size 1 gives empty lists.
#pragma once

#include <cstdint>
#include <vector>

#include "flock/topology/graph.h"
#include "flock/topology/schedule.h"

namespace flock {
namespace topology {

class DynamicOnePeer : public DynamicSchedule {
 public:
  // Copies what it needs from `topology` (its edges, not its weights).
  explicit DynamicOnePeer(const Graph& topology);

  int size() const override { return static_cast<int>(turns_.size()); }
  std::vector<int> send_ranks(std::int64_t k, int rank) const override;
  std::vector<int> recv_ranks(std::int64_t k, int rank) const override;

  // r's turn list: out-neighbours sorted by clockwise distance from r.
  const std::vector<int>& turn_list(int rank) const;

 private:
  // pick(k, r), or -1 when r has no out-neighbour.
  int pick(std::int64_t k, int rank) const;

  // A rank s with r on its turn list, at position `slot`: s sends to r when
  // k mod turn_sizes_[s] == slot.
  struct Sender {
    int rank;
    int slot;
  };

  std::vector<std::vector<int>> turns_;
  std::vector<std::int64_t> turn_sizes_;      // turn_sizes_[s] = turns_[s].size()
  std::vector<std::vector<Sender>> senders_;  // senders_[r]: the ranks with r on their turn list
};

}  // namespace topology
}  // namespace flock
