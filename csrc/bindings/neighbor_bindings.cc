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

namespace py = pybind11;

namespace flock {
namespace {

using WeightList = std::vector<std::pair<int, double>>;

bool IsFloating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

// Records `plan` in the submission, or why there is none (and whom to tell).
void SetPlan(Submission& s, Result<NeighborPlan> plan, const std::vector<int>& named_ranks) {
  Runtime& runtime = RequireRuntime();
  if (s.op.local_status.ok() && !plan.ok()) s.op.local_status = plan.status();
  if (s.op.local_status.ok()) {
    s.op.neighbor = std::make_shared<const NeighborPlan>(std::move(plan).value());
    return;
  }
  auto graph = runtime.topology();
  s.op.notify_on_reject =
      PeersOfRejectedCall(graph.get(), runtime.rank(), runtime.size(), named_ranks);
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
        if (s.op.local_status.ok() && !IsFloating(s.op.tensor.dtype)) {
          s.op.local_status = Status::Unsupported(
              std::string("neighbor_allreduce averages, so it needs a floating-point tensor "
                          "(float16, bfloat16, float32 or float64), got ") +
              DataTypeName(s.op.tensor.dtype));
        }
        Runtime& runtime = RequireRuntime();
        NeighborWeights weights{self_weight, src_weights, dst_weights};
        auto graph = runtime.topology();
        SetPlan(s, PlanNeighborAllreduce(graph.get(), runtime.rank(), runtime.size(), weights, check),
                named_ranks);
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
        SetPlan(s,
                PlanNeighborAllgather(graph.get(), runtime.rank(), runtime.size(), src_ranks,
                                      dst_ranks),
                named_ranks);
        return Submit(std::move(s));
      },
      py::arg("input"), py::arg("src_ranks"), py::arg("dst_ranks"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
      py::arg("named_ranks") = std::vector<int>());
}

}  // namespace flock
