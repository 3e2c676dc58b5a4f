// Bindings for init/shutdown and the questions about ranks and machines.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"
#include "flock/common/build_config.h"
#include "flock/common/config.h"
#include "flock/transport/registry.h"

namespace py = pybind11;

namespace flock {

std::unique_ptr<Runtime>& RuntimeSlot() {
  static std::unique_ptr<Runtime> runtime;
  return runtime;
}

Runtime& RequireRuntime() {
  if (!RuntimeSlot()) {
    throw StatusError(Status::NotInitialized(
        "flock is not initialized: call flock.init() (e.g. bf.init()) before this"));
  }
  return *RuntimeSlot();
}

namespace {

void BindLifecycle(py::module_& m) {
  m.def(
      "init",
      [](std::optional<int> device) {
        if (RuntimeSlot()) return;
        Config config = ValueOrThrow(Config::FromEnvironment());
        if (device) {
          if (*device < 0) {
            ThrowIfError(Status::InvalidArgument("init(device=" + std::to_string(*device) +
                                                 "): a CUDA device index is >= 0"));
          }
          config.device = *device;  // wins over FLOCK_DEVICE
        }
        py::gil_scoped_release release;  // MPI start-up can take a while
        RuntimeSlot() = ValueOrThrow(Runtime::Create(config));
      },
      py::arg("device") = py::none());
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    RuntimeSlot().reset();
  });
  m.def(
      "finalize",
      [] {
        RuntimeSlot().reset();
        FinalizeTransports();
      },
      "Ends MPI if flock started it; called once at interpreter exit.");
  m.def("is_initialized", [] { return static_cast<bool>(RuntimeSlot()); });
  m.def(
      "abort",
      [](int code) {
        if (RuntimeSlot()) RuntimeSlot()->transport().Abort(code);
      },
      "Ends every rank of the job with the given exit code.");
}

// The job's layout and this build's features.
void BindQuestions(py::module_& m) {
  m.def("size", [] { return RequireRuntime().size(); });
  m.def("rank", [] { return RequireRuntime().rank(); });
  m.def("local_size", [] { return RequireRuntime().machine().local_size; });
  m.def("local_rank", [] { return RequireRuntime().machine().local_rank; });
  m.def("machine_size", [] { return RequireRuntime().machine().machine_size; });
  m.def("machine_rank", [] { return RequireRuntime().machine().machine_rank; });
  m.def("is_homogeneous", [] { return RequireRuntime().machine().homogeneous; });
  m.def(
      "host_names", [] { return RequireRuntime().machine().hosts; },
      "Each rank's host name, by rank (gathered at init).");
  m.def("mpi_threads_supported", [] { return RequireRuntime().transport().threads_supported(); });
  m.def("unified_mpi_window_model_supported",
        [] { return RequireRuntime().transport().unified_window_model(); });
  m.def("nccl_built", [] { return NcclBuilt(); });
  m.def(
      "gpu_info",
      []() -> py::object {
        GpuBackend* gpu = RequireRuntime().gpu_if_made();
        if (gpu == nullptr) return py::none();
        py::dict info;
        info["device"] = gpu->device();
        info["via_mpi"] = gpu->via_mpi();
        info["staged_bytes"] = gpu->staged_bytes();
        py::list groups;
        for (CommGroup group : gpu->communicators()) groups.append(CommGroupName(group));
        info["communicators"] = groups;
        return info;
      },
      "The GPU backend's device, transport (via_mpi) and bytes staged through host memory; "
      "None until the first CUDA tensor.");
  m.def("cuda_toolkit_found", [] { return FLOCK_WITH_NCCL != 0; });
}

void BindSettings(py::module_& m) {
  m.def("quiet", [] { return RequireRuntime().config().quiet; });
  m.def(
      "logs_debug", [] { return LogEnabled(LogLevel::kDebug); },
      "Whether FLOCK_LOG_LEVEL (parsed at init) is debug or trace.");
  m.def(
      "settings",
      [] {
        py::list rows;
        for (const SettingInfo& s : SettingsTable()) {
          rows.append(py::make_tuple(s.name, s.type, s.default_value, s.doc));
        }
        return rows;
      },
      "Every FLOCK_* setting as (name, type, default, doc).");
}

void BindTimeline(py::module_& m) {
  m.def(
      "timeline_start",
      [](const std::string& path) {
        Runtime& runtime = RequireRuntime();
        ThrowIfError(runtime.engine().timeline().Start(path, runtime.rank()));
      },
      "Starts recording a timeline (one file per rank, see docs/timeline.md).");
  m.def("timeline_stop", [] { RequireRuntime().engine().timeline().Stop(); });
  // Both return whether a timeline is being recorded (Bluefog's return value).
  m.def("timeline_begin", [](const std::string& row, const std::string& span) {
    Timeline& timeline = RequireRuntime().engine().timeline();
    timeline.Begin(row, span);
    return timeline.active();
  });
  m.def("timeline_end", [](const std::string& row) {
    Timeline& timeline = RequireRuntime().engine().timeline();
    timeline.End(row);
    return timeline.active();
  });
}

}  // namespace

void BindBasics(py::module_& m) {
  BindLifecycle(m);
  BindQuestions(m);
  BindSettings(m);
  BindTimeline(m);
  m.attr("__version__") = FLOCK_VERSION;
}

}  // namespace flock
