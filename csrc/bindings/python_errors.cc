#include "flock/bindings/python_errors.h"

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

}  // namespace

void RegisterErrorTranslator(py::module_& /*module*/) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object errors = py::module_::import("flock.errors");
      py::object cls = errors.attr(PythonClassName(e.status().code()));
      PyErr_SetString(cls.ptr(), e.status().message().c_str());
    }
  });
}

}  // namespace flock
