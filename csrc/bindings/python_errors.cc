#include "flock/bindings/python_errors.h"

#include <exception>
#include <string>

namespace py = pybind11;

namespace flock {
namespace {

const char* PythonClassName(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return "FlockInvalidArgumentError";
    case StatusCode::kMismatch: return "FlockMismatchError";
    case StatusCode::kNotInitialized: return "FlockNotInitializedError";
    case StatusCode::kUnsupported: return "FlockUnsupportedError";
    case StatusCode::kTransportError: return "FlockTransportError";
    case StatusCode::kAborted: return "FlockAbortedError";
    default: return "FlockError";
  }
}

// The errors that report another rank failing (stopped, gone, shut down, its
// transport broken): their message gets the host of every rank it names. A
// mismatch or a bad argument is about the program, not about where it runs.
bool ReportsAFailedRank(StatusCode code) {
  return code == StatusCode::kAborted || code == StatusCode::kTransportError ||
         code == StatusCode::kInternal;
}

std::string WithHosts(StatusCode code, const std::string& message) {
  if (!ReportsAFailedRank(code)) return message;
  try {
    return py::module_::import("flock._rank_hosts").attr("with_hosts")(message).cast<std::string>();
  } catch (const std::exception&) {
    // A Python error, or not a str: the error itself matters more than where its ranks run.
    return message;
  }
}

}  // namespace

void RegisterErrorTranslator(py::module_& /*module*/) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object errors = py::module_::import("flock.errors");
      py::object cls = errors.attr(PythonClassName(e.status().code()));
      PyErr_SetString(cls.ptr(), WithHosts(e.status().code(), e.status().message()).c_str());
    }
  });
}

}  // namespace flock
