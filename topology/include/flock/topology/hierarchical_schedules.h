// Dynamic schedules for a cluster of M machines with L local ranks each
// (homogeneous: world_size = M * L, rank = machine * L + local rank).
//
// Vocabulary:
//   machine m, local rank l   rank r = m * L + l.
//   outgoing local rank o     o = k mod L: at iteration k the rank with local
//                             rank o on every machine talks to another machine;
//                             the others talk inside their machine.
//   inner ring                the L - 1 non-outgoing ranks of a machine in the
//                             order o+1, o+2, ..., o-1 (mod L): the machine's
//                             ring with the outgoing rank skipped. A hop of h
//                             along it is Bluefog's "+1 when it would land on
//                             or pass the outgoing rank".
//   outer hop / inner hop     how many machines / inner-ring places a message
//                             travels at iteration k.
//   e(x)                      floor(log2(x)); hops of 2^(k mod (e(x) + 1))
//                             cycle through 1, 2, 4, ... up to the largest
//                             power of two <= x.
//
// | schedule                 | outer hop (machines)       | inner hop                  |
// |--------------------------|----------------------------|----------------------------|
// | Exp2DynamicMachine       | 2^(k mod (e(M-1)+1))       | (machine level only)       |
// | InnerOuterRingDynamic    | 1                          | 1                          |
// | InnerOuterExpo2Dynamic   | 2^(k mod (e(M-1)+1))       | 2^(k mod (e(L-2)+1))       |
//
// A node sends to the node one hop ahead and receives from the node one hop
// behind, so every node sends to one node and receives from one node.
// Bluefog requires M >= 2 (machine schedule) and L > 2 (inner/outer). flock
// accepts every M, L >= 1 and extends them without sending to oneself: a lone
// machine (M = 1) or a lone inner-ring member (L = 2) sends and receives
// nothing that iteration; L = 1 is the outer ring/exponential alone.
// Where Bluefog's preconditions hold the lists are identical to Bluefog's.
#pragma once

#include <cstdint>
#include <vector>

#include "flock/topology/schedule.h"

namespace flock {
namespace topology {

// Bluefog's GetExp2DynamicSendRecvMachineRanks: nodes are machine ids.
// At iteration k machine m sends to m + h and receives from m - h (mod M),
// h = 2^(k mod (e(M-1)+1)).
class Exp2DynamicMachine : public DynamicSchedule {
 public:
  Exp2DynamicMachine(int world_size, int local_size);

  int size() const override { return machines_; }
  std::vector<int> send_ranks(std::int64_t k, int machine) const override;
  std::vector<int> recv_ranks(std::int64_t k, int machine) const override;

  int machine_of(int rank) const;
  int machine_hop(std::int64_t k) const;

 private:
  int machines_;
  int local_size_;
};

// Common rule of the two rank-level inner/outer schedules; they differ only in
// their hops.
class InnerOuterDynamic : public DynamicSchedule {
 public:
  int size() const override { return machines_ * local_size_; }
  std::vector<int> send_ranks(std::int64_t k, int rank) const override;
  std::vector<int> recv_ranks(std::int64_t k, int rank) const override;

  int num_machines() const { return machines_; }
  int local_size() const { return local_size_; }
  // Local rank that goes outside at iteration k.
  int outgoing_local_rank(std::int64_t k) const;
  virtual int outer_hop(std::int64_t k) const = 0;
  virtual int inner_hop(std::int64_t k) const = 0;

 protected:
  InnerOuterDynamic(const char* name, int world_size, int local_size);

 private:
  // The rank `direction` (+1 ahead / -1 behind) hops away from `rank` at
  // iteration k, or -1 when rank has nobody to talk to.
  int peer(std::int64_t k, int rank, int direction) const;

  int machines_;
  int local_size_;
};

// Bluefog's GetInnerOuterRingDynamicSendRecvRanks.
class InnerOuterRingDynamic : public InnerOuterDynamic {
 public:
  InnerOuterRingDynamic(int world_size, int local_size);
  int outer_hop(std::int64_t) const override { return 1; }
  int inner_hop(std::int64_t) const override { return 1; }
};

// Bluefog's GetInnerOuterExpo2DynamicSendRecvRanks.
class InnerOuterExpo2Dynamic : public InnerOuterDynamic {
 public:
  InnerOuterExpo2Dynamic(int world_size, int local_size);
  int outer_hop(std::int64_t k) const override;
  int inner_hop(std::int64_t k) const override;
};

}  // namespace topology
}  // namespace flock
