// Machine-level and inner/outer dynamic schedules (see
// hierarchical_schedules.h for the vocabulary: machine m, local rank l,
// outgoing local rank o, inner ring, hops).
//
// Inner-ring arithmetic: a non-outgoing local rank l sits at place
// q = (l - o - 1) mod L of the inner ring of size R = L - 1; a hop of h moves
// to place (q + h) mod R, i.e. local rank (o + 1 + (q + h) mod R) mod L.
#include "flock/topology/hierarchical_schedules.h"

#include "check.h"

namespace flock {
namespace topology {

using detail::fail;

namespace {

// floor(log2(x)) for x >= 1.
int floor_log2(std::int64_t x) {
  int e = 0;
  while (x > 1) {
    x >>= 1;
    ++e;
  }
  return e;
}

// 2^(k mod (floor(log2(span)) + 1)) for span >= 1: cycles 1, 2, 4, ... <= span.
int exp2_hop(std::int64_t k, int span) {
  return 1 << static_cast<int>(k % (floor_log2(span) + 1));
}

std::int64_t mod(std::int64_t a, std::int64_t n) {
  return ((a % n) + n) % n;
}

void check_cluster(const char* name, int world_size, int local_size) {
  if (world_size < 1 || local_size < 1 || world_size % local_size != 0) {
    fail(name, "(", world_size, ", ", local_size, "): needs world_size >= 1 and local_size >= 1 ",
         "with world_size a multiple of local_size (homogeneous machines)");
  }
}

}  // namespace

Exp2DynamicMachine::Exp2DynamicMachine(int world_size, int local_size)
    : machines_(world_size / (local_size > 0 ? local_size : 1)), local_size_(local_size) {
  check_cluster("Exp2DynamicMachine", world_size, local_size);
}

int Exp2DynamicMachine::machine_of(int rank) const {
  detail::check_node(rank, machines_ * local_size_, "machine_of(", rank, ")");
  return rank / local_size_;
}

int Exp2DynamicMachine::machine_hop(std::int64_t k) const {
  return machines_ < 2 ? 0 : exp2_hop(k, machines_ - 1);
}

std::vector<int> Exp2DynamicMachine::send_ranks(std::int64_t k, int machine) const {
  check_step("send_ranks", k, machine);
  if (machines_ < 2) return {};
  return {static_cast<int>(mod(machine + machine_hop(k), machines_))};
}

std::vector<int> Exp2DynamicMachine::recv_ranks(std::int64_t k, int machine) const {
  check_step("recv_ranks", k, machine);
  if (machines_ < 2) return {};
  return {static_cast<int>(mod(machine - machine_hop(k), machines_))};
}

InnerOuterDynamic::InnerOuterDynamic(const char* name, int world_size, int local_size)
    : machines_(world_size / (local_size > 0 ? local_size : 1)), local_size_(local_size) {
  check_cluster(name, world_size, local_size);
}

int InnerOuterDynamic::outgoing_local_rank(std::int64_t k) const {
  return static_cast<int>(k % local_size_);
}

int InnerOuterDynamic::peer(std::int64_t k, int rank, int direction) const {
  const int L = local_size_;
  const int machine = rank / L;
  const int local = rank % L;
  const int outgoing = outgoing_local_rank(k);
  if (local == outgoing) {
    // Same local rank on the machine outer_hop(k) ahead / behind.
    if (machines_ < 2) return -1;
    const std::int64_t target = mod(machine + direction * outer_hop(k), machines_);
    return static_cast<int>(target * L + local);  // target < M, so this fits in int
  }
  const int ring = L - 1;  // the inner ring skips the outgoing rank
  if (ring < 2) return -1;
  const std::int64_t place = mod(local - outgoing - 1, L);
  const std::int64_t target_place = mod(place + std::int64_t{direction} * inner_hop(k), ring);
  const std::int64_t first_rank = static_cast<std::int64_t>(machine) * L;
  return static_cast<int>(first_rank + mod(outgoing + 1 + target_place, L));
}

std::vector<int> InnerOuterDynamic::send_ranks(std::int64_t k, int rank) const {
  check_step("send_ranks", k, rank);
  const int target = peer(k, rank, +1);
  if (target < 0) return {};
  return {target};
}

std::vector<int> InnerOuterDynamic::recv_ranks(std::int64_t k, int rank) const {
  check_step("recv_ranks", k, rank);
  const int source = peer(k, rank, -1);
  if (source < 0) return {};
  return {source};
}

InnerOuterRingDynamic::InnerOuterRingDynamic(int world_size, int local_size)
    : InnerOuterDynamic("InnerOuterRingDynamic", world_size, local_size) {}

InnerOuterExpo2Dynamic::InnerOuterExpo2Dynamic(int world_size, int local_size)
    : InnerOuterDynamic("InnerOuterExpo2Dynamic", world_size, local_size) {}

int InnerOuterExpo2Dynamic::outer_hop(std::int64_t k) const {
  return num_machines() < 2 ? 0 : exp2_hop(k, num_machines() - 1);
}

int InnerOuterExpo2Dynamic::inner_hop(std::int64_t k) const {
  return local_size() < 3 ? 0 : exp2_hop(k, local_size() - 2);
}

}  // namespace topology
}  // namespace flock
