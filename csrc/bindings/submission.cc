#include "flock/bindings/submission.h"

#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"

namespace flock {

TensorView Take(Submission& s, const pybind11::object& capsule,
                const std::optional<std::string>& dtype_override) {
  if (!s.op.local_status.ok()) return {};
  Result<DlpackTensor> tensor =
      DlpackTensor::FromCapsule(capsule.cast<pybind11::capsule>(), dtype_override);
  if (!tensor.ok()) {
    s.op.local_status = tensor.status();
    return {};
  }
  TensorView view = tensor.value().view();
  s.keep_alive->push_back(std::move(tensor).value());
  if (view.device.type != DeviceType::kCPU) {
    s.op.local_status = Status::Unsupported(
        "tensor is on " + DeviceToString(view.device) +
        " but this flock build has no GPU backend (NCCL); move it to the CPU with .cpu()");
  }
  return view;
}

Submission Begin(OpKind kind, const std::optional<std::string>& name,
                 const std::optional<std::string>& local_error) {
  Runtime& runtime = RequireRuntime();
  Submission s;
  s.op.kind = kind;
  s.op.name = name ? *name : runtime.AutoName(OpKindName(kind));
  s.op.auto_named = !name;
  if (local_error) s.op.local_status = Status::InvalidArgument(*local_error);
  return s;
}

HandleId Submit(Submission s, bool wait_follows) {
  std::shared_ptr<void> keep_alive = std::move(s.keep_alive);
  return ValueOrThrow(
      RequireRuntime().engine().Submit(std::move(s.op), s.output, keep_alive, wait_follows));
}

}  // namespace flock
