// Bindings for the global collectives. Python hands over DLPack capsules
// (already contiguous) and, for a tensor it could not convert, the reason
// instead: the rank then still takes part in the agreement step, so every
// rank raises instead of some hanging.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/dlpack_tensor.h"
#include "bindings/python_errors.h"
#include "bindings/runtime_holder.h"
#include "ops/collectives.h"

namespace py = pybind11;

namespace flock {
namespace {

// A tensor argument: the capsule (or None) and the local problem so far.
struct TensorArg {
  std::optional<DlpackTensor> tensor;
  Status status;
};

TensorArg ReadTensor(const py::object& capsule, const std::optional<std::string>& dtype_override,
                     const std::optional<std::string>& local_error) {
  TensorArg arg;
  if (local_error) {
    arg.status = Status::InvalidArgument(*local_error);
    return arg;
  }
  Result<DlpackTensor> tensor =
      DlpackTensor::FromCapsule(capsule.cast<py::capsule>(), dtype_override);
  if (!tensor.ok()) {
    arg.status = tensor.status();
    return arg;
  }
  arg.tensor = std::move(tensor).value();
  if (arg.tensor->view().device.type != DeviceType::kCPU) {
    arg.status = Status::Unsupported(
        "tensor is on " + DeviceToString(arg.tensor->view().device) +
        " but this flock build has no GPU backend (NCCL); move it to the CPU with .cpu()");
  }
  return arg;
}

TensorView ViewOf(const TensorArg& arg) {
  return arg.tensor ? arg.tensor->view() : TensorView{};
}

std::string NameOr(Runtime& runtime, const std::optional<std::string>& name, const char* op) {
  return name ? *name : runtime.AutoName(op);
}

CommGroup ToGroup(bool local_only) {
  return local_only ? CommGroup::kLocal : CommGroup::kWorld;
}

}  // namespace

void BindCollectives(py::module_& m) {
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::kSum)
      .value("AVERAGE", ReduceOp::kAverage)
      .value("MIN", ReduceOp::kMin)
      .value("MAX", ReduceOp::kMax)
      .value("PRODUCT", ReduceOp::kProduct);

  m.def(
      "allreduce",
      [](py::object input, py::object output, ReduceOp op, std::optional<std::string> name,
         bool local_only, std::optional<std::string> dtype_override,
         std::optional<std::string> local_error) {
        Runtime& runtime = RequireRuntime();
        TensorArg in = ReadTensor(input, dtype_override, local_error);
        // No output capsule means in place.
        TensorArg out = in.status.ok() && !output.is_none()
                            ? ReadTensor(output, dtype_override, std::nullopt)
                            : TensorArg{};
        AllreduceOptions options{op, ToGroup(local_only), NameOr(runtime, name, "allreduce")};
        Status local = in.status.ok() ? out.status : in.status;
        py::gil_scoped_release release;
        ThrowIfError(Allreduce(runtime.transport(), ViewOf(in),
                               out.tensor ? ViewOf(out) : ViewOf(in), options, local));
      },
      py::arg("input"), py::arg("output"), py::arg("op"), py::arg("name") = py::none(),
      py::arg("local_only") = false, py::arg("dtype_override") = py::none(),
      py::arg("local_error") = py::none());

  m.def(
      "broadcast",
      [](py::object tensor, int root, std::optional<std::string> name,
         std::optional<std::string> dtype_override, std::optional<std::string> local_error) {
        Runtime& runtime = RequireRuntime();
        TensorArg arg = ReadTensor(tensor, dtype_override, local_error);
        BroadcastOptions options{root, CommGroup::kWorld, NameOr(runtime, name, "broadcast")};
        py::gil_scoped_release release;
        ThrowIfError(Broadcast(runtime.transport(), ViewOf(arg), options, arg.status));
      },
      py::arg("tensor"), py::arg("root"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none());

  // allocate(shape) -> DLPack capsule of a new contiguous tensor of that shape.
  m.def(
      "allgather",
      [](py::object input, py::function allocate, std::optional<std::string> name,
         std::optional<std::string> dtype_override, std::optional<std::string> local_error) {
        Runtime& runtime = RequireRuntime();
        TensorArg in = ReadTensor(input, dtype_override, local_error);
        AllgatherOptions options{CommGroup::kWorld, NameOr(runtime, name, "allgather")};
        std::optional<DlpackTensor> output;
        OutputAllocator allocator = [&](const std::vector<int64_t>& shape) -> Result<TensorView> {
          py::gil_scoped_acquire gil;
          try {
            Result<DlpackTensor> made =
                DlpackTensor::FromCapsule(allocate(py::tuple(py::cast(shape))), dtype_override);
            if (!made.ok()) return made.status();
            output = std::move(made).value();
            return output->view();
          } catch (py::error_already_set& e) {
            return Status::Internal(std::string("allocating the allgather output failed: ") +
                                    e.what());
          }
        };
        py::gil_scoped_release release;
        ThrowIfError(Allgather(runtime.transport(), ViewOf(in), allocator, options, in.status));
      },
      py::arg("input"), py::arg("allocate"), py::arg("name") = py::none(),
      py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none());

  m.def("barrier", [] {
    Runtime& runtime = RequireRuntime();
    py::gil_scoped_release release;
    ThrowIfError(runtime.transport().Barrier(CommGroup::kWorld));
  });
}

}  // namespace flock
