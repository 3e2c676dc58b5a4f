#include "flock/bindings/submission.h"

#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"

namespace flock {
namespace {

// A CUDA tensor: this rank's GPU backend (made now if this is the first), the
// tensor on its device, and the point of the caller's stream the op waits for.
Status TakeCuda(Submission& s, const TensorView& view) {
  Result<GpuBackend*> made = RequireRuntime().Gpu();
  if (!made.ok()) {
    return Status(made.status().code(),
                  "tensor is on " + DeviceToString(view.device) + ": " + made.status().message());
  }
  GpuBackend* gpu = made.value();
  FLOCK_RETURN_IF_ERROR(gpu->CheckDevice(view.device.index));
  if (view.dtype == DataType::kInt16 && !gpu->via_mpi()) {  // refused before any GPU work
    return Status::Unsupported(
        "NCCL has no int16 type: convert CUDA tensors of this dtype to int32, move them to "
        "the CPU, or set FLOCK_GPU_VIA_MPI=1");
  }
  if (s.op.ready != nullptr) return Status::OK();  // the input's event covers the output
  FLOCK_ASSIGN_OR_RETURN(s.op.ready, gpu->RecordReady(s.stream));
  return Status::OK();
}

}  // namespace

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
  if (view.device.type == DeviceType::kCUDA) s.op.local_status = TakeCuda(s, view);
  return view;
}

Submission Begin(OpKind kind, const std::optional<std::string>& name,
                 const std::optional<std::string>& local_error, StreamHandle stream) {
  Runtime& runtime = RequireRuntime();
  Submission s;
  s.op.kind = kind;
  s.op.name = name ? *name : runtime.AutoName(OpKindName(kind));
  s.op.auto_named = !name;
  s.stream = stream;
  if (local_error) s.op.local_status = Status::InvalidArgument(*local_error);
  return s;
}

HandleId Submit(Submission s, bool wait_follows) {
  std::shared_ptr<void> keep_alive = std::move(s.keep_alive);
  return ValueOrThrow(
      RequireRuntime().engine().Submit(std::move(s.op), s.output, keep_alive, wait_follows));
}

}  // namespace flock
