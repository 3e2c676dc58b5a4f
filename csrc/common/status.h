// Status and Result: the core's one error model (docs/errors.md).
//
// Every fallible function in the C++ core returns a Status (or a Result<T>
// carrying a value or a Status). Exceptions never cross the core's API; the
// Python bindings turn a non-OK Status into the flock.FlockError subclass that
// matches its code.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace flock {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input on this rank (shape, dtype, option)
  kMismatch,         // ranks disagree about an op (shape, dtype, op, root, name)
  kNotInitialized,   // used before init() or after shutdown()
  kUnsupported,      // valid request that this build cannot serve (dtype, device)
  kTransportError,   // the communication library failed
  kAborted,          // the job or the op was cancelled
  kInternal,         // a bug in flock
};
constexpr int kNumStatusCodes = 8;

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status Mismatch(std::string m) { return {StatusCode::kMismatch, std::move(m)}; }
  static Status NotInitialized(std::string m) {
    return {StatusCode::kNotInitialized, std::move(m)};
  }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status TransportError(std::string m) {
    return {StatusCode::kTransportError, std::move(m)};
  }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace flock

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define FLOCK_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::flock::Status _flock_status = (expr);        \
    if (!_flock_status.ok()) return _flock_status; \
  } while (0)

// `lhs = value of rexpr` (a Result), or return its Status from the enclosing function.
#define FLOCK_ASSIGN_OR_RETURN(lhs, rexpr) \
  FLOCK_ASSIGN_OR_RETURN_IMPL(FLOCK_CONCAT(_flock_result_, __LINE__), lhs, rexpr)
#define FLOCK_ASSIGN_OR_RETURN_IMPL(result, lhs, rexpr) \
  auto result = (rexpr);                                \
  if (!result.ok()) return result.status();             \
  lhs = std::move(result).value()
#define FLOCK_CONCAT_INNER(a, b) a##b
#define FLOCK_CONCAT(a, b) FLOCK_CONCAT_INNER(a, b)
