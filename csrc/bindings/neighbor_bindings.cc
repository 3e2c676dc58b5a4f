// Bindings for the neighbor ops. Python has already turned the weight
// arguments into (rank, weight) lists — or, when it could not, into
// `local_error` plus the ranks it could read (`named_ranks`), so the rejected
// call can still tell its peers not to wait. The plan (who sends what to
// whom, with which weights) is resolved here against the job's topology.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/runtime_holder.h"
#include "bindings/submission.h"
#include "neighbor/neighbor_plan.h"
#include "neighbor/op_steps.h"

namespace py = pybind11;

namespace flock {
namespace {

using WeightList = std::vector<std::pair<int, double>>;

bool IsFloating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

// The tensor's shape on the wire: a 0-d tensor counts as one row for an allgather.
std::vector<int64_t> RowShape(const TensorView& t) {
  return t.shape.empty() ? std::vector<int64_t>{1} : t.shape;
}

// Records the steps `plan` leads to, or why there are none (and whom to tell).
template <typename MakeSteps>
void SetSteps(Submission& s, Result<NeighborPlan> plan, MakeSteps make_steps,
              std::vector<int> peers_if_rejected) {
  if (s.op.local_status.ok() && !plan.ok()) s.op.local_status = plan.status();
  if (s.op.local_status.ok()) {
    s.op.steps = std::make_shared<const std::vector<ExchangeStep>>(make_steps(plan.value()));
    return;
  }
  s.op.notify_on_reject = std::move(peers_if_rejected);
}

void RequireFloating(Submission& s, const char* op) {
  if (s.op.local_status.ok() && !IsFloating(s.op.tensor.dtype)) {
    s.op.local_status = Status::Unsupported(
        std::string(op) +
        " averages, so it needs a floating-point tensor (float16, bfloat16, float32 or "
        "float64), got " +
        DataTypeName(s.op.tensor.dtype));
  }
}

// The ranks a rejected hierarchical call tells: the other ranks of its machine
// and its slice peers on the static (or named) neighbour machines.
std::vector<int> HierarchicalPeers(Runtime& runtime, const std::vector<int>& named_machines) {
  const MachineLayout& m = runtime.machine();
  std::vector<int> peers;
  for (int j = 0; j < m.local_size; ++j) {
    if (j != m.local_rank) peers.push_back(m.machine_rank * m.local_size + j);
  }
  auto graph = runtime.machine_topology();
  for (int machine : PeersOfRejectedCall(graph.get(), m.machine_rank, m.machine_size,
                                         named_machines)) {
    peers.push_back(machine * m.local_size + m.local_rank);
  }
  return peers;
}

}  // namespace

void BindNeighborOps(py::module_& m) {
  // output None: in place.
  m.def(
      "enqueue_neighbor_allreduce",
      [](py::object input, py::object output, std::optional<double> self_weight,
         std::optional<WeightList> src_weights, std::optional<WeightList> dst_weights,
         bool check, std::optional<std::string> name, std::optional<std::string> dtype_override,
         std::optional<std::string> local_error, std::vector<int> named_ranks) {
        Submission s = Begin(OpKind::kNeighborAllreduce, name, local_error);
        if (!input.is_none()) s.op.tensor = Take(s, input, dtype_override);
        s.output = output.is_none() ? s.op.tensor : Take(s, output, dtype_override);
        RequireFloating(s, "neighbor_allreduce");
        Runtime& runtime = RequireRuntime();
        NeighborWeights weights{self_weight, src_weights, dst_weights};
        auto graph = runtime.topology();
        const TensorView tensor = s.op.tensor;
        SetSteps(
            s, PlanNeighborAllreduce(graph.get(), runtime.rank(), runtime.size(), weights, check),
            [&](const NeighborPlan& plan) {
              return std::vector<ExchangeStep>{
                  NeighborAllreduceStep(plan, tensor.num_elements(), tensor.shape)};
            },
            PeersOfRejectedCall(graph.get(), runtime.rank(), runtime.size(), named_ranks));
        return Submit(std::move(s));
      },
      py::arg("input"), py::arg("output"), py::arg("self_weight"), py::arg("src_weights"),
      py::arg("dst_weights"), py::arg("check"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
      py::arg("named_ranks") = std::vector<int>());

  m.def(
      "enqueue_neighbor_allgather",
      [](py::object input, std::optional<std::vector<int>> src_ranks,
         std::optional<std::vector<int>> dst_ranks, std::optional<std::string> name,
         std::optional<std::string> dtype_override, std::optional<std::string> local_error,
         std::vector<int> named_ranks) {
        Submission s = Begin(OpKind::kNeighborAllgather, name, local_error);
        if (!input.is_none()) s.op.tensor = Take(s, input, dtype_override);
        Runtime& runtime = RequireRuntime();
        auto graph = runtime.topology();
        const TensorView tensor = s.op.tensor;
        SetSteps(
            s,
            PlanNeighborAllgather(graph.get(), runtime.rank(), runtime.size(), src_ranks,
                                  dst_ranks),
            [&](const NeighborPlan& plan) {
              return std::vector<ExchangeStep>{NeighborAllgatherStep(plan, RowShape(tensor))};
            },
            PeersOfRejectedCall(graph.get(), runtime.rank(), runtime.size(), named_ranks));
        return Submit(std::move(s));
      },
      py::arg("input"), py::arg("src_ranks"), py::arg("dst_ranks"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
      py::arg("named_ranks") = std::vector<int>());

  m.def(
      "enqueue_hierarchical_neighbor_allreduce",
      [](py::object input, py::object output, std::optional<double> self_weight,
         std::optional<WeightList> src_machine_weights,
         std::optional<WeightList> dst_machine_weights, bool check,
         std::optional<std::string> name, std::optional<std::string> dtype_override,
         std::optional<std::string> local_error, std::vector<int> named_machines) {
        Submission s = Begin(OpKind::kHierarchicalNeighborAllreduce, name, local_error);
        if (!input.is_none()) s.op.tensor = Take(s, input, dtype_override);
        s.output = output.is_none() ? s.op.tensor : Take(s, output, dtype_override);
        RequireFloating(s, "hierarchical_neighbor_allreduce");
        Runtime& runtime = RequireRuntime();
        const MachineLayout& layout = runtime.machine();
        if (s.op.local_status.ok() && !layout.homogeneous) {
          s.op.local_status = Status::Unsupported(
              "hierarchical_neighbor_allreduce needs every machine to run the same number of "
              "ranks, numbered machine by machine");
        }
        NeighborWeights weights{self_weight, src_machine_weights, dst_machine_weights};
        auto graph = runtime.machine_topology();
        const int64_t count = s.op.tensor.num_elements();
        SetSteps(
            s,
            PlanNeighborAllreduce(graph.get(), layout.machine_rank, layout.machine_size, weights,
                                  check, MachineArgNames()),
            [&](const NeighborPlan& plan) {
              return HierarchicalSteps(plan, count, layout.local_size, layout.local_rank,
                                       layout.machine_rank, check);
            },
            HierarchicalPeers(runtime, named_machines));
        return Submit(std::move(s));
      },
      py::arg("input"), py::arg("output"), py::arg("self_weight"),
      py::arg("src_machine_weights"), py::arg("dst_machine_weights"), py::arg("check"),
      py::arg("name") = py::none(), py::arg("dtype_override") = py::none(),
      py::arg("local_error") = py::none(), py::arg("named_machines") = std::vector<int>());
}

}  // namespace flock
