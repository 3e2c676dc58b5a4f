// Config: every FLOCK_* environment variable, declared once in a table with its
// type, default and documentation, and parsed in one place (config.cc).
//
// Nothing else in flock reads the environment. Tests build a Config from an
// explicit map instead of the process environment.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flock/common/logging.h"
#include "flock/common/status.h"

namespace flock {

// One row of the settings table (printed by `flockrun --help-env`, docs/env.md).
struct SettingInfo {
  const char* name;
  const char* type;
  const char* default_value;
  const char* doc;
};

const std::vector<SettingInfo>& SettingsTable();

struct Config {
  LogLevel log_level = LogLevel::kWarning;
  std::string timeline_path;  // empty: no timeline
  int64_t fusion_threshold_bytes = 64 << 20;
  int64_t cache_capacity = 1024;  // names in the response cache
  double cycle_time_ms = 5.0;
  int64_t neighbor_inline_bytes = 64 << 10;
  int64_t neighbor_lane_budget_bytes = 4 << 20;  // lanes received at once per remote peer; 0: all
  double stall_warning_s = 60.0;
  double stall_shutdown_s = 0.0;  // 0: never turn a stall into an error
  int local_size_override = 0;    // 0: machines are MPI shared-memory groups
  // The variable local_size_override came from (FLOCK_LOCAL_SIZE, or Bluefog's
  // BLUEFOG_NODES_PER_MACHINE when only that is set), for error messages.
  std::string local_size_variable = "FLOCK_LOCAL_SIZE";
  int device = -1;            // the CUDA device of this rank; -1: local rank % device count
  bool gpu_via_mpi = false;   // CUDA tensors over MPI through pinned memory, not NCCL
  bool malloc_tuning = true;  // see common/malloc_tuning.h
  bool quiet = false;         // no "running as 1 rank" note (read by the Python layer)
  // "NAME=value" of the user's own glibc malloc setting, if any: it wins
  // over the tuning (not a FLOCK_* setting, so not in the table).
  std::string user_malloc_setting;

  // Looks a variable up; returns nullopt when it is unset.
  using Lookup = std::function<std::optional<std::string>(const std::string&)>;

  // Parses every FLOCK_* setting; an unparsable value is an error naming it.
  static Result<Config> Parse(const Lookup& lookup);
  static Result<Config> FromEnvironment();
  static Result<Config> FromMap(const std::map<std::string, std::string>& values);
};

}  // namespace flock
