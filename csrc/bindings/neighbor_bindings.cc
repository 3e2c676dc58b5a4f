// Bindings for the neighbor ops. Python has already turned the weight
// arguments into (rank, weight) lists — or, when it could not, into
// `local_error` plus the ranks it could read (`named_ranks`), so the rejected
// call can still tell its peers not to wait (`cuda`: the rejected tensor was a
// CUDA tensor, whose neighbor ops go through negotiation like the peers'). The
// plan (who sends what to whom, with which weights) is resolved by
// runtime/neighbor_requests.h.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/bindings/runtime_holder.h"
#include "flock/bindings/submission.h"
#include "flock/runtime/neighbor_requests.h"

namespace py = pybind11;

namespace flock {
namespace {

using WeightList = std::vector<std::pair<int, double>>;

// output None: in place.
void BindNeighborAllreduce(py::module_& m) {
  m.def(
      "enqueue_neighbor_allreduce",
      [](py::object input, py::object output, std::optional<double> self_weight,
         std::optional<WeightList> src_weights, std::optional<WeightList> dst_weights, bool check,
         std::optional<std::string> name, std::optional<std::string> dtype_override,
         std::optional<std::string> local_error, std::vector<int> named_ranks, bool wait_follows,
         StreamHandle stream, bool cuda) {
        Submission s = Begin(OpKind::kNeighborAllreduce, name, local_error, stream);
        if (!input.is_none()) s.op.tensor = Take(s, input, dtype_override);
        if (input.is_none() && cuda) s.op.tensor.device = Device{DeviceType::kCUDA, 0};
        s.output = output.is_none() ? s.op.tensor : Take(s, output, dtype_override);
        PrepareNeighborAllreduce(RequireRuntime(), s.op,
                                 NeighborWeights{self_weight, src_weights, dst_weights}, check,
                                 named_ranks);
        return Submit(std::move(s), wait_follows);
      },
      py::arg("input"), py::arg("output"), py::arg("self_weight"), py::arg("src_weights"),
      py::arg("dst_weights"), py::arg("check"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
      py::arg("named_ranks") = std::vector<int>(), py::arg("wait_follows") = false,
      py::arg("stream") = 0, py::arg("cuda") = false);
}

void BindNeighborAllgather(py::module_& m) {
  m.def(
      "enqueue_neighbor_allgather",
      [](py::object input, std::optional<std::vector<int>> src_ranks,
         std::optional<std::vector<int>> dst_ranks, std::optional<std::string> name,
         std::optional<std::string> dtype_override, std::optional<std::string> local_error,
         std::vector<int> named_ranks, bool wait_follows, bool check, StreamHandle stream,
         bool cuda) {
        Submission s = Begin(OpKind::kNeighborAllgather, name, local_error, stream);
        if (!input.is_none()) s.op.tensor = Take(s, input, dtype_override);
        if (input.is_none() && cuda) s.op.tensor.device = Device{DeviceType::kCUDA, 0};
        PrepareNeighborAllgather(RequireRuntime(), s.op, src_ranks, dst_ranks, check, named_ranks);
        return Submit(std::move(s), wait_follows);
      },
      py::arg("input"), py::arg("src_ranks"), py::arg("dst_ranks"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
      py::arg("named_ranks") = std::vector<int>(), py::arg("wait_follows") = false,
      py::arg("check") = true, py::arg("stream") = 0, py::arg("cuda") = false);
}

void BindHierarchicalNeighborAllreduce(py::module_& m) {
  m.def(
      "enqueue_hierarchical_neighbor_allreduce",
      [](py::object input, py::object output, std::optional<double> self_weight,
         std::optional<WeightList> src_machine_weights,
         std::optional<WeightList> dst_machine_weights, bool check, std::optional<std::string> name,
         std::optional<std::string> dtype_override, std::optional<std::string> local_error,
         std::vector<int> named_machines, bool wait_follows, StreamHandle stream, bool cuda) {
        Submission s = Begin(OpKind::kHierarchicalNeighborAllreduce, name, local_error, stream);
        if (!input.is_none()) s.op.tensor = Take(s, input, dtype_override);
        if (input.is_none() && cuda) s.op.tensor.device = Device{DeviceType::kCUDA, 0};
        s.output = output.is_none() ? s.op.tensor : Take(s, output, dtype_override);
        PrepareHierarchicalNeighborAllreduce(
            RequireRuntime(), s.op,
            NeighborWeights{self_weight, src_machine_weights, dst_machine_weights}, check,
            named_machines);
        return Submit(std::move(s), wait_follows);
      },
      py::arg("input"), py::arg("output"), py::arg("self_weight"), py::arg("src_machine_weights"),
      py::arg("dst_machine_weights"), py::arg("check"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
      py::arg("named_machines") = std::vector<int>(), py::arg("wait_follows") = false,
      py::arg("stream") = 0, py::arg("cuda") = false);
}

}  // namespace

void BindNeighborOps(py::module_& m) {
  BindNeighborAllreduce(m);
  BindNeighborAllgather(m);
  BindHierarchicalNeighborAllreduce(m);
}

}  // namespace flock
