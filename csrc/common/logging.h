// Logging: every line says which rank and which subsystem wrote it.
//
//   FLOCK_LOG(kWarning, "transport") << "retrying " << n;
// prints "[flock 3 transport WARNING] retrying 2" on stderr when the level set
// by FLOCK_LOG_LEVEL (via Config) lets warnings through.
#pragma once

#include <optional>
#include <sstream>
#include <string>

namespace flock {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError, kOff };

std::optional<LogLevel> ParseLogLevel(const std::string& text);
const char* LogLevelName(LogLevel level);

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void SetLogRank(int rank);  // -1 before the transport knows the rank
bool LogEnabled(LogLevel level);

// Collects one line and writes it atomically when destroyed.
class LogLine {
 public:
  LogLine(LogLevel level, const char* subsystem) : level_(level), subsystem_(subsystem) {}
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* subsystem_;
  std::ostringstream stream_;
};

// Swallows the stream expression so FLOCK_LOG is one expression (safe in an
// unbraced if/else) that evaluates nothing when the level is filtered out.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace flock

#define FLOCK_LOG(level, subsystem)              \
  !::flock::LogEnabled(::flock::LogLevel::level) \
      ? (void)0                                  \
      : ::flock::LogVoidify() & ::flock::LogLine(::flock::LogLevel::level, subsystem).stream()
