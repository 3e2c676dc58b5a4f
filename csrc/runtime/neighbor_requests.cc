#include "flock/runtime/neighbor_requests.h"

#include <memory>
#include <string>

#include "flock/neighbor/op_steps.h"

namespace flock {
namespace {

// The tensor's shape on the wire: a 0-d tensor counts as one row for an allgather.
std::vector<int64_t> RowShape(const TensorView& t) {
  return t.shape.empty() ? std::vector<int64_t>{1} : t.shape;
}

// Records the steps `plan` leads to, or why there are none and whom to tell
// (asked only then: a call that goes ahead needs no list of peers).
template <typename MakeSteps, typename PeersIfRejected>
void SetSteps(OpRequest& op, Result<NeighborPlan> plan, MakeSteps make_steps,
              PeersIfRejected peers_if_rejected) {
  if (op.local_status.ok() && !plan.ok()) op.local_status = plan.status();
  if (op.local_status.ok()) {
    op.steps = std::make_shared<const std::vector<ExchangeStep>>(make_steps(plan.value()));
    return;
  }
  op.notify_on_reject = peers_if_rejected();
}

// One step in a vector, moved in (an initializer list would copy its vectors).
std::vector<ExchangeStep> OneStep(ExchangeStep step) {
  std::vector<ExchangeStep> steps;
  steps.push_back(std::move(step));
  return steps;
}

void RequireFloating(OpRequest& op) {
  if (op.local_status.ok() && !IsFloatingPoint(op.tensor.dtype)) {
    op.local_status = Status::Unsupported(
        std::string(OpKindName(op.kind)) +
        " averages, so it needs a floating-point tensor (float16, bfloat16, float32 or "
        "float64), got " +
        DataTypeName(op.tensor.dtype));
  }
}

// The ranks a rejected hierarchical call tells: the other ranks of its machine
// and its slice peers on the static (or named) neighbour machines.
std::vector<int> HierarchicalPeers(const Runtime& runtime, const std::vector<int>& named_machines) {
  const MachineLayout& m = runtime.machine();
  std::vector<int> peers;
  for (int j = 0; j < m.local_size; ++j) {
    if (j != m.local_rank) peers.push_back(m.machine_rank * m.local_size + j);
  }
  auto graph = runtime.machine_topology();
  for (int machine :
       PeersOfRejectedCall(graph.get(), m.machine_rank, m.machine_size, named_machines)) {
    peers.push_back(machine * m.local_size + m.local_rank);
  }
  return peers;
}

}  // namespace

void PrepareNeighborAllreduce(Runtime& runtime, OpRequest& op, const NeighborWeights& weights,
                              bool check, const std::vector<int>& named_ranks) {
  RequireFloating(op);
  auto graph = runtime.topology();
  const TensorView tensor = op.tensor;
  SetSteps(
      op, PlanNeighborAllreduce(graph.get(), runtime.rank(), runtime.size(), weights, check),
      [&](const NeighborPlan& plan) {
        return OneStep(NeighborAllreduceStep(plan, tensor.num_elements(), tensor.shape));
      },
      [&] {
        return PeersOfRejectedCall(graph.get(), runtime.rank(), runtime.size(), named_ranks);
      });
}

void PrepareNeighborAllgather(Runtime& runtime, OpRequest& op,
                              const std::optional<std::vector<int>>& src_ranks,
                              const std::optional<std::vector<int>>& dst_ranks, bool check,
                              const std::vector<int>& named_ranks) {
  auto graph = runtime.topology();
  const TensorView tensor = op.tensor;
  SetSteps(
      op,
      PlanNeighborAllgather(graph.get(), runtime.rank(), runtime.size(), src_ranks, dst_ranks,
                            check),
      [&](const NeighborPlan& plan) {
        return OneStep(NeighborAllgatherStep(plan, RowShape(tensor)));
      },
      [&] {
        return PeersOfRejectedCall(graph.get(), runtime.rank(), runtime.size(), named_ranks);
      });
}

void PrepareHierarchicalNeighborAllreduce(Runtime& runtime, OpRequest& op,
                                          const NeighborWeights& machine_weights, bool check,
                                          const std::vector<int>& named_machines) {
  RequireFloating(op);
  const MachineLayout& layout = runtime.machine();
  if (op.local_status.ok() && !layout.homogeneous) {
    op.local_status = Status::Unsupported(
        "hierarchical_neighbor_allreduce needs every machine to run the same number of ranks, "
        "numbered machine by machine");
  }
  auto graph = runtime.machine_topology();
  const int64_t count = op.tensor.num_elements();
  SetSteps(
      op,
      PlanNeighborAllreduce(graph.get(), layout.machine_rank, layout.machine_size, machine_weights,
                            check, MachineArgNames()),
      [&](const NeighborPlan& plan) {
        return HierarchicalSteps(plan, count, layout.local_size, layout.local_rank,
                                 layout.machine_rank, check);
      },
      [&] { return HierarchicalPeers(runtime, named_machines); });
}

}  // namespace flock
