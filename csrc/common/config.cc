#include "flock/common/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace flock {
namespace {

const std::vector<SettingInfo> kSettings = {
    {"FLOCK_LOG_LEVEL", "enum", "warning",
     "Log verbosity: trace, debug, info, warning, error or off."},
    {"FLOCK_TIMELINE", "path", "",
     "Write a Chrome trace-event timeline to this path (one file per rank)."},
    {"FLOCK_FUSION_THRESHOLD", "bytes", "67108864",
     "Largest fusion buffer: small tensors going the same way travel together up to this size."},
    {"FLOCK_CACHE_CAPACITY", "int", "1024",
     "Response cache: how many tensor names the engine remembers, so later rounds of a name skip "
     "sending its full description (0 disables)."},
    {"FLOCK_CYCLE_TIME_MS", "float", "5",
     "Fusion window: announce new requests once none arrived for this long (a thread waiting for "
     "one ends it early); at most 60000."},
    {"FLOCK_NEIGHBOR_INLINE_BYTES", "bytes", "65536",
     "Neighbor ops: tensors up to this size travel inside the fused control message to a "
     "neighbour; larger ones in a message of their own, straight from the input."},
    {"FLOCK_NEIGHBOR_LANE_BUDGET", "bytes", "4194304",
     "Neighbor ops: bytes of large-tensor messages from one peer on another host received at "
     "once (at least one message); the rest wait, newest first, so what the next forward pass "
     "needs first is not queued behind older data. 0: receive everything at once, in order."},
    {"FLOCK_STALL_WARNING_S", "float", "60",
     "Warn when some ranks have submitted a tensor and others have not for this long."},
    {"FLOCK_STALL_SHUTDOWN_S", "float", "0",
     "Turn a stall that lasts this long into an error on the waiting ranks, global and neighbor "
     "ops alike, whatever FLOCK_STALL_WARNING_S is; ranks other than 0 also give up on a silent "
     "coordinator after this long + 0.75 s (0: never)."},
    {"FLOCK_MALLOC_TUNING", "int", "1",
     "1: keep large freed buffers in the process (glibc mmap/trim thresholds 1 GiB, one arena) so "
     "MPI's per-call temporaries and new tensors do not page-fault again; 0: leave malloc alone. "
     "Skipped when glibc's own MALLOC_* threshold/arena variables or GLIBC_TUNABLES malloc "
     "settings are set."},
    {"FLOCK_QUIET", "flag", "",
     "Anything but empty or 0: init() in a program started without a launcher does not say "
     "that it runs as one rank."},
    {"FLOCK_DEVICE", "int", "",
     "The CUDA device this rank uses for CUDA tensors (NCCL builds); unset: the local rank "
     "modulo the number of devices. A CUDA tensor on another device is refused."},
    {"FLOCK_GPU_VIA_MPI", "int", "0",
     "1: CUDA tensors travel over MPI through pinned host memory instead of NCCL (clusters "
     "where NCCL cannot be used); 0: NCCL."},
    {"FLOCK_LOCAL_SIZE", "int", "0",
     "Pretend machines have this many consecutive ranks each (must divide the world size); 0 "
     "uses MPI shared-memory groups. Bluefog's BLUEFOG_NODES_PER_MACHINE is read when this is "
     "unset."},
};

Status BadValue(const std::string& name, const std::string& value, const std::string& expected) {
  return Status::InvalidArgument("environment variable " + name + "='" + value +
                                 "' is not valid: expected " + expected);
}

Status ParseInt(const std::string& name, const std::string& text, int64_t min, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min) {
    return BadValue(name, text, min == 0 ? "an integer >= 0" : "a positive integer");
  }
  *out = value;
  return Status::OK();
}

std::string FormatNumber(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// The engine turns the cycle time into a clock duration (int64 nanoseconds)
// and adds ten of them to a time point: a minute keeps far from overflow.
constexpr double kMaxCycleTimeMs = 60000;

Status ParseNumber(const std::string& name, const std::string& text, double* out,
                   double max = HUGE_VAL) {
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(value >= 0) || value > max) {
    const std::string range =
        max == HUGE_VAL ? "a number >= 0" : "a number from 0 to " + FormatNumber(max);
    return BadValue(name, text, range);
  }
  *out = value;
  return Status::OK();
}

// Notes the first of glibc's own malloc settings (read at startup) that the
// malloc tuning would override: the tuning then stays off.
void NoteUserMallocSetting(const Config::Lookup& lookup, Config* config) {
  for (const char* name :
       {"MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    auto v = lookup(name);
    const bool about_malloc = v && (std::string(name) != "GLIBC_TUNABLES" ||
                                    v->find("glibc.malloc.") != std::string::npos);
    if (about_malloc && config->user_malloc_setting.empty())
      config->user_malloc_setting = std::string(name) + "=" + *v;
  }
}

// FLOCK_DEVICE and FLOCK_GPU_VIA_MPI (read by NCCL builds at the first CUDA tensor).
Status ParseGpuSettings(const Config::Lookup& lookup, Config* config) {
  if (auto v = lookup("FLOCK_DEVICE")) {
    int64_t device = 0;
    FLOCK_RETURN_IF_ERROR(ParseInt("FLOCK_DEVICE", *v, 0, &device));
    config->device = static_cast<int>(device);
  }
  if (auto v = lookup("FLOCK_GPU_VIA_MPI")) {
    int64_t on = 0;
    FLOCK_RETURN_IF_ERROR(ParseInt("FLOCK_GPU_VIA_MPI", *v, 0, &on));
    if (on > 1) return BadValue("FLOCK_GPU_VIA_MPI", *v, "0 or 1");
    config->gpu_via_mpi = on == 1;
  }
  return Status::OK();
}

}  // namespace

const std::vector<SettingInfo>& SettingsTable() {
  return kSettings;
}

Result<Config> Config::Parse(const Lookup& lookup) {
  Config config;
  if (auto v = lookup("FLOCK_LOG_LEVEL")) {
    auto level = ParseLogLevel(*v);
    if (!level) return BadValue("FLOCK_LOG_LEVEL", *v, "trace, debug, info, warning, error or off");
    config.log_level = *level;
  }
  if (auto v = lookup("FLOCK_TIMELINE")) config.timeline_path = *v;
  if (auto v = lookup("FLOCK_FUSION_THRESHOLD")) {
    FLOCK_RETURN_IF_ERROR(
        ParseInt("FLOCK_FUSION_THRESHOLD", *v, 0, &config.fusion_threshold_bytes));
  }
  if (auto v = lookup("FLOCK_CACHE_CAPACITY")) {
    FLOCK_RETURN_IF_ERROR(ParseInt("FLOCK_CACHE_CAPACITY", *v, 0, &config.cache_capacity));
  }
  if (auto v = lookup("FLOCK_CYCLE_TIME_MS")) {
    FLOCK_RETURN_IF_ERROR(
        ParseNumber("FLOCK_CYCLE_TIME_MS", *v, &config.cycle_time_ms, kMaxCycleTimeMs));
  }
  if (auto v = lookup("FLOCK_NEIGHBOR_INLINE_BYTES")) {
    FLOCK_RETURN_IF_ERROR(
        ParseInt("FLOCK_NEIGHBOR_INLINE_BYTES", *v, 0, &config.neighbor_inline_bytes));
  }
  if (auto v = lookup("FLOCK_NEIGHBOR_LANE_BUDGET")) {
    FLOCK_RETURN_IF_ERROR(
        ParseInt("FLOCK_NEIGHBOR_LANE_BUDGET", *v, 0, &config.neighbor_lane_budget_bytes));
  }
  if (auto v = lookup("FLOCK_STALL_WARNING_S")) {
    FLOCK_RETURN_IF_ERROR(ParseNumber("FLOCK_STALL_WARNING_S", *v, &config.stall_warning_s));
  }
  if (auto v = lookup("FLOCK_STALL_SHUTDOWN_S")) {
    FLOCK_RETURN_IF_ERROR(ParseNumber("FLOCK_STALL_SHUTDOWN_S", *v, &config.stall_shutdown_s));
  }
  if (auto v = lookup("FLOCK_MALLOC_TUNING")) {
    int64_t on = 0;
    FLOCK_RETURN_IF_ERROR(ParseInt("FLOCK_MALLOC_TUNING", *v, 0, &on));
    if (on > 1) return BadValue("FLOCK_MALLOC_TUNING", *v, "0 or 1");
    config.malloc_tuning = on == 1;
  }
  NoteUserMallocSetting(lookup, &config);
  FLOCK_RETURN_IF_ERROR(ParseGpuSettings(lookup, &config));
  if (auto v = lookup("FLOCK_QUIET")) config.quiet = !v->empty() && *v != "0";
  // Bluefog programs emulate machines with BLUEFOG_NODES_PER_MACHINE; flock's name wins.
  for (const char* name : {"FLOCK_LOCAL_SIZE", "BLUEFOG_NODES_PER_MACHINE"}) {
    auto v = lookup(name);
    if (!v) continue;
    int64_t local = 0;
    FLOCK_RETURN_IF_ERROR(ParseInt(name, *v, 0, &local));
    if (local > (int64_t{1} << 30)) return BadValue(name, *v, "a number of ranks");
    config.local_size_override = static_cast<int>(local);
    config.local_size_variable = name;
    break;
  }
  return config;
}

Result<Config> Config::FromEnvironment() {
  return Parse([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

Result<Config> Config::FromMap(const std::map<std::string, std::string>& values) {
  return Parse([&values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  });
}

}  // namespace flock
