// Bindings for the window ops (runtime/windows.h). Python has turned weight
// arguments into (rank, weight) lists; a wrong argument raises here, on this
// rank only: one-sided ops involve no other rank in their checks. The
// collective and blocking calls let go of the GIL while they wait.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/bindings/dlpack_tensor.h"
#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"
#include "flock/runtime/windows.h"

namespace py = pybind11;

namespace flock {
namespace {

DlpackTensor TakeTensor(const py::object& capsule,
                        const std::optional<std::string>& dtype_override) {
  return ValueOrThrow(DlpackTensor::FromCapsule(capsule.cast<py::capsule>(), dtype_override));
}

HandleId SubmitRequest(OpRequest op, std::shared_ptr<void> keep_alive) {
  const TensorView tensor = op.tensor;
  return ValueOrThrow(
      RequireRuntime().engine().Submit(std::move(op), tensor, std::move(keep_alive)));
}

void BindCreateAndFree(py::module_& m) {
  m.def(
      "win_create",
      [](py::object capsule, const std::string& name, bool zero_init,
         std::optional<std::string> dtype_override) {
        auto tensor = std::make_shared<DlpackTensor>(TakeTensor(capsule, dtype_override));
        py::gil_scoped_release release;
        ThrowIfError(WinCreate(RequireRuntime(), name, tensor->view(), tensor, zero_init));
      },
      py::arg("tensor"), py::arg("name"), py::arg("zero_init") = false,
      py::arg("dtype_override") = py::none());
  m.def(
      "win_free",
      [](std::optional<std::string> name) {
        py::gil_scoped_release release;
        ThrowIfError(WinFree(RequireRuntime(), name));
      },
      py::arg("name") = py::none());
  m.def("win_names", [] { return WinNames(RequireRuntime()); });
  m.def("set_win_ops_with_p", [](bool on) { RequireRuntime().set_win_ops_with_p(on); });
  m.def("win_ops_with_p", [] { return RequireRuntime().win_ops_with_p(); });
}

void BindOneSided(py::module_& m) {
  m.def(
      "enqueue_win_put",
      [](py::object capsule, const std::string& name, std::optional<double> self_weight,
         std::optional<WeightList> dst_weights, bool require_mutex, bool accumulate,
         std::optional<std::string> dtype_override) {
        auto tensor = std::make_shared<DlpackTensor>(TakeTensor(capsule, dtype_override));
        const OpKind kind = accumulate ? OpKind::kWinAccumulate : OpKind::kWinPut;
        OpRequest op = ValueOrThrow(MakeWinPut(RequireRuntime(), kind, tensor->view(), name,
                                               self_weight, dst_weights, require_mutex));
        return SubmitRequest(std::move(op), tensor);
      },
      py::arg("tensor"), py::arg("name"), py::arg("self_weight"), py::arg("dst_weights"),
      py::arg("require_mutex"), py::arg("accumulate"), py::arg("dtype_override") = py::none());
  m.def(
      "enqueue_win_get",
      [](const std::string& name, std::optional<WeightList> src_weights, bool require_mutex) {
        OpRequest op = ValueOrThrow(MakeWinGet(RequireRuntime(), name, src_weights, require_mutex));
        return SubmitRequest(std::move(op), nullptr);
      },
      py::arg("name"), py::arg("src_weights"), py::arg("require_mutex"));
  m.def(
      "enqueue_win_mutex",
      [](const std::string& name, std::optional<std::vector<int>> ranks, bool release) {
        OpRequest op = ValueOrThrow(MakeWinMutex(RequireRuntime(), name, ranks, release));
        return SubmitRequest(std::move(op), nullptr);
      },
      py::arg("name"), py::arg("ranks"), py::arg("release"));
  m.def(
      "win_lock_own_slots",
      [](const std::string& name, std::optional<std::vector<int>> ranks, bool release) {
        py::gil_scoped_release unlocked;
        ThrowIfError(WinLockOwnSlots(RequireRuntime(), name, ranks, release));
      },
      py::arg("name"), py::arg("ranks"), py::arg("release"));
}

void BindUpdate(py::module_& m) {
  m.def(
      "win_update",
      [](const std::string& name, py::object out_capsule, std::optional<double> self_weight,
         std::optional<WeightList> neighbor_weights, bool reset, bool require_mutex,
         std::optional<std::string> dtype_override) {
        DlpackTensor out = TakeTensor(out_capsule, dtype_override);
        WinUpdateOptions options{self_weight, neighbor_weights, reset, require_mutex};
        py::gil_scoped_release release;
        ThrowIfError(WinUpdate(RequireRuntime(), name, options, out.view()));
      },
      py::arg("name"), py::arg("out"), py::arg("self_weight"), py::arg("neighbor_weights"),
      py::arg("reset"), py::arg("require_mutex"), py::arg("dtype_override") = py::none());
  m.def("win_versions",
        [](const std::string& name) { return ValueOrThrow(WinVersions(RequireRuntime(), name)); });
  m.def("win_associated_p", [](const std::string& name) {
    return ValueOrThrow(WinAssociatedP(RequireRuntime(), name));
  });
}

}  // namespace

void BindWindows(py::module_& m) {
  BindCreateAndFree(m);
  BindOneSided(m);
  BindUpdate(m);
}

}  // namespace flock
