// Bindings for the global collectives, all asynchronous: each enqueue_* call
// hands the request to the engine and returns a handle; wait() blocks (with
// the GIL released) and raises the op's error. Python hands over DLPack
// capsules (already contiguous) and, for a tensor it could not convert, the
// reason instead: the rank then still announces the request, so every rank
// raises instead of some hanging.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>

#include "flock/bindings/dlpack_tensor.h"
#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"
#include "flock/bindings/submission.h"
#include "flock/collectives/scatter_layout.h"

namespace py = pybind11;

namespace flock {
namespace {

// A CUDA op's outputs are ready once flock's stream reaches its done event:
// each of `streams` (the caller's current and submission streams) waits for
// it, returning at once; with `block` the host also waits, without the GIL,
// waking every 100 ms for Ctrl-C.
Status AwaitGpu(const GpuEvent& done, const std::vector<StreamHandle>& streams, bool block) {
  FLOCK_ASSIGN_OR_RETURN(GpuBackend * gpu, RequireRuntime().Gpu());
  for (StreamHandle stream : streams) FLOCK_RETURN_IF_ERROR(gpu->StreamWait(stream, done));
  if (!block) return Status::OK();
  while (true) {
    Result<bool> reached = false;
    {
      py::gil_scoped_release release;
      reached = gpu->HostWaitFor(done, std::chrono::milliseconds(100));
    }
    if (!reached.ok() || reached.value()) return reached.status();
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

py::object Wait(HandleId handle, std::vector<StreamHandle> streams, bool block) {
  Engine& engine = RequireRuntime().engine();
  Result<Completion> done = Status::OK();
  {
    py::gil_scoped_release release;
    // Every 100 ms the wait gives Python a chance to run signal handlers (Ctrl-C).
    done = engine.Wait(handle, std::chrono::milliseconds(100), [] {
      py::gil_scoped_acquire gil;
      return PyErr_CheckSignals() == 0 ? Status::OK() : Status::Aborted("interrupted");
    });
  }
  if (!done.ok() && PyErr_Occurred()) throw py::error_already_set();
  Completion completion = ValueOrThrow(std::move(done));
  // A failed CUDA op may have queued work too: wait for it before raising.
  const Status gpu = completion.done ? AwaitGpu(*completion.done, streams, block) : Status::OK();
  ThrowIfError(completion.status);
  ThrowIfError(gpu);
  if (!completion.gathered) return py::none();
  if (completion.gathered->received_splits.empty())
    return ToCapsule(std::move(completion.gathered));
  std::vector<int64_t> splits = completion.gathered->received_splits;  // alltoall
  return py::make_tuple(ToCapsule(std::move(completion.gathered)), std::move(splits));
}

// output None: in place.
HandleId EnqueueAllreduce(py::object input, py::object output, ReduceOp op,
                          std::optional<std::string> name, bool local_only,
                          std::optional<std::string> dtype_override,
                          std::optional<std::string> local_error, bool wait_follows,
                          StreamHandle stream) {
  Submission s = Begin(OpKind::kAllreduce, name, local_error, stream);
  s.op.reduce_op = op;
  s.op.group = local_only ? CommGroup::kLocal : CommGroup::kWorld;
  s.op.tensor = Take(s, input, dtype_override);
  s.output = output.is_none() ? s.op.tensor : Take(s, output, dtype_override);
  if (s.op.local_status.ok()) s.op.local_status = CheckReduceSupported(s.op.tensor.dtype, op);
  return Submit(std::move(s), wait_follows);
}

HandleId EnqueueBroadcast(py::object tensor, int root, std::optional<std::string> name,
                          std::optional<std::string> dtype_override,
                          std::optional<std::string> local_error, bool wait_follows,
                          StreamHandle stream) {
  Submission s = Begin(OpKind::kBroadcast, name, local_error, stream);
  s.op.root = root;
  s.op.tensor = Take(s, tensor, dtype_override);
  const int size = RequireRuntime().size();
  if (s.op.local_status.ok() && (root < 0 || root >= size)) {
    s.op.local_status =
        Status::InvalidArgument("root_rank " + std::to_string(root) + " is out of range for " +
                                std::to_string(size) + " ranks");
  }
  return Submit(std::move(s), wait_follows);
}

HandleId EnqueueAllgather(py::object input, std::optional<std::string> name,
                          std::optional<std::string> dtype_override,
                          std::optional<std::string> local_error, bool wait_follows,
                          StreamHandle stream) {
  Submission s = Begin(OpKind::kAllgather, name, local_error, stream);
  s.op.tensor = Take(s, input, dtype_override);
  if (s.op.tensor.shape.empty()) s.op.tensor.shape = {1};  // a 0-d tensor gathers as one row
  return Submit(std::move(s), wait_follows);
}

// output: this rank's rows (Python allocates it: ReducescatterShape).
HandleId EnqueueReducescatter(py::object input, py::object output, ReduceOp op,
                              std::optional<std::string> name,
                              std::optional<std::string> dtype_override,
                              std::optional<std::string> local_error, bool wait_follows,
                              StreamHandle stream) {
  Submission s = Begin(OpKind::kReducescatter, name, local_error, stream);
  s.op.reduce_op = op;
  s.op.tensor = Take(s, input, dtype_override);
  s.output = Take(s, output, dtype_override);
  if (s.op.local_status.ok()) {
    const Runtime& runtime = RequireRuntime();
    s.op.local_status =
        CheckReducescatter(s.op.tensor, s.output, op, runtime.size(), runtime.rank());
  }
  return Submit(std::move(s), wait_follows);
}

// splits None: an even split of dim 0.
HandleId EnqueueAlltoall(py::object input, std::optional<std::vector<int64_t>> splits,
                         std::optional<std::string> name, std::optional<std::string> dtype_override,
                         std::optional<std::string> local_error, bool wait_follows,
                         StreamHandle stream) {
  Submission s = Begin(OpKind::kAlltoall, name, local_error, stream);
  s.op.tensor = Take(s, input, dtype_override);
  if (s.op.local_status.ok() && s.op.tensor.shape.empty()) {
    s.op.local_status =
        Status::InvalidArgument("alltoall needs a tensor with at least one dimension");
  }
  if (s.op.local_status.ok()) {
    Result<std::vector<int64_t>> resolved = ResolveSplits(
        splits.value_or(std::vector<int64_t>{}), s.op.tensor.shape[0], RequireRuntime().size());
    if (resolved.ok())
      s.op.splits = std::move(resolved).value();
    else
      s.op.local_status = resolved.status();
  }
  return Submit(std::move(s), wait_follows);
}

HandleId EnqueueBarrier(std::optional<std::string> name, bool wait_follows) {
  return Submit(Begin(OpKind::kBarrier, name, std::nullopt), wait_follows);
}

}  // namespace

void BindCollectives(py::module_& m) {
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::kSum)
      .value("AVERAGE", ReduceOp::kAverage)
      .value("MIN", ReduceOp::kMin)
      .value("MAX", ReduceOp::kMax)
      .value("PRODUCT", ReduceOp::kProduct);

  m.def("enqueue_allreduce", &EnqueueAllreduce, py::arg("input"), py::arg("output"), py::arg("op"),
        py::arg("name") = py::none(), py::arg("local_only") = false,
        py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
        py::arg("wait_follows") = false, py::arg("stream") = 0);
  m.def("enqueue_broadcast", &EnqueueBroadcast, py::arg("tensor"), py::arg("root"),
        py::arg("name") = py::none(), py::arg("dtype_override") = py::none(),
        py::arg("local_error") = py::none(), py::arg("wait_follows") = false,
        py::arg("stream") = 0);
  m.def("enqueue_allgather", &EnqueueAllgather, py::arg("input"), py::arg("name") = py::none(),
        py::arg("dtype_override") = py::none(), py::arg("local_error") = py::none(),
        py::arg("wait_follows") = false, py::arg("stream") = 0);
  m.def("enqueue_reducescatter", &EnqueueReducescatter, py::arg("input"), py::arg("output"),
        py::arg("op"), py::arg("name") = py::none(), py::arg("dtype_override") = py::none(),
        py::arg("local_error") = py::none(), py::arg("wait_follows") = false,
        py::arg("stream") = 0);
  m.def(
      "reducescatter_shape",
      [](const std::vector<int64_t>& shape) {
        const Runtime& runtime = RequireRuntime();
        return ReducescatterShape(shape, runtime.size(), runtime.rank());
      },
      py::arg("shape"), "This rank's output shape of a reducescatter of `shape`.");
  m.def("enqueue_alltoall", &EnqueueAlltoall, py::arg("input"), py::arg("splits") = py::none(),
        py::arg("name") = py::none(), py::arg("dtype_override") = py::none(),
        py::arg("local_error") = py::none(), py::arg("wait_follows") = false,
        py::arg("stream") = 0);
  m.def("enqueue_barrier", &EnqueueBarrier, py::arg("name") = py::none(),
        py::arg("wait_follows") = false);

  m.def(
      "poll",
      [](HandleId handle) {
        return ValueOrThrow(RequireRuntime().engine().handles().IsDone(handle));
      },
      "True when the op of `handle` has finished (successfully or not).");
  m.def("wait", &Wait, py::arg("handle"), py::arg("streams") = std::vector<StreamHandle>(),
        py::arg("block") = false,
        "Blocks until the op of `handle` finishes; raises its error. Returns the gathered "
        "tensor's DLPack capsule for allgather, (capsule, received splits) for alltoall, "
        "else None. A CUDA op has finished once its "
        "work is queued on flock's stream: then each of `streams` (the caller's CUDA streams) "
        "is made to wait for it, and with `block` the host waits for the GPU too.");
  m.def("engine_counters", [] { return RequireRuntime().engine().counters().Snapshot(); });
}

}  // namespace flock
