// DynamicOnePeer (see one_peer.h): turn lists are built once; sends are one
// lookup, receives one scan over the ranks that may send (the in-neighbours: a
// scan over every rank made a mixing graph O(n^2)), each kept with r's slot on
// its turn list so that the scan does not visit the senders' lists (at 10^6
// nodes those visits were cache misses, 37 % of a one-peer period's time).
#include "flock/topology/one_peer.h"

#include <algorithm>

#include "check.h"

namespace flock {
namespace topology {

DynamicOnePeer::DynamicOnePeer(const Graph& topology) {
  const int n = topology.size();
  turns_.resize(static_cast<std::size_t>(n));
  turn_sizes_.resize(static_cast<std::size_t>(n));
  senders_.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    std::vector<int> turn = topology.out_neighbors(r);
    // Clockwise distance (j - r) mod n; distinct for distinct j.
    const auto clockwise = [r, n](int j) { return (j - r + n) % n; };
    std::sort(turn.begin(), turn.end(),
              [&clockwise](int a, int b) { return clockwise(a) < clockwise(b); });
    for (std::size_t slot = 0; slot < turn.size(); ++slot) {
      const int j = turn[slot];
      if (j != r) senders_[static_cast<std::size_t>(j)].push_back({r, static_cast<int>(slot)});
    }
    turn_sizes_[r] = static_cast<std::int64_t>(turn.size());
    turns_[r] = std::move(turn);
  }
}

const std::vector<int>& DynamicOnePeer::turn_list(int rank) const {
  detail::check_node(rank, size(), "turn_list(", rank, ")");
  return turns_[rank];
}

int DynamicOnePeer::pick(std::int64_t k, int rank) const {
  const auto& turn = turns_[rank];
  if (turn.empty()) return -1;
  return turn[static_cast<std::size_t>(k % static_cast<std::int64_t>(turn.size()))];
}

std::vector<int> DynamicOnePeer::send_ranks(std::int64_t k, int rank) const {
  check_step("send_ranks", k, rank);
  const int target = pick(k, rank);
  if (target < 0) return {};
  return {target};
}

std::vector<int> DynamicOnePeer::recv_ranks(std::int64_t k, int rank) const {
  check_step("recv_ranks", k, rank);
  std::vector<int> sources;
  for (const Sender& s : senders_[static_cast<std::size_t>(rank)]) {
    if (k % turn_sizes_[static_cast<std::size_t>(s.rank)] == s.slot) sources.push_back(s.rank);
  }
  return sources;  // sorted: senders_ lists are filled in rank order
}

}  // namespace topology
}  // namespace flock
