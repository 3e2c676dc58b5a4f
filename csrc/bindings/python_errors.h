// Turns a non-OK Status into the Python exception of its code, defined in
// flock/errors.py (FlockError and its subclasses).
#pragma once

#include <stdexcept>
#include <string>

#include <pybind11/pybind11.h>

#include "flock/common/status.h"

namespace flock {

// Thrown by bindings, translated to Python by RegisterErrorTranslator.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status status)
      : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(Result<T> result) {
  ThrowIfError(result.status());
  return std::move(result).value();
}

void RegisterErrorTranslator(pybind11::module_& module);

}  // namespace flock
