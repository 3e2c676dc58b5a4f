// fuzz_config: the FLOCK_* environment as Config::Parse reads it
// (common/config.h). The input is lines "NAME=value"; a value is either
// refused with a message naming its variable or turned into settings the
// engine can use: it converts the cycle time into a clock duration
// (engine.cc AnnounceDeadline, neighbor_exchange.cc flush_deadline) and compares the stall
// times with elapsed seconds.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "flock/common/config.h"
#include "fuzz_check.h"

namespace {

std::map<std::string, std::string> Variables(const std::string& text) {
  std::map<std::string, std::string> variables;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    const size_t equals = line.find('=');
    // The environment cannot hold a NUL in a value: neither does this input.
    if (equals != std::string::npos && line.find('\0') == std::string::npos)
      variables[line.substr(0, equals)] = line.substr(equals + 1);
    begin = end + 1;
  }
  return variables;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flock;
  const auto variables = Variables(std::string(reinterpret_cast<const char*>(data), size));
  Result<Config> config = Config::FromMap(variables);
  if (!config.ok()) {
    FLOCK_FUZZ_CHECK(config.status().message().find("FLOCK_") != std::string::npos ||
                         config.status().message().find("BLUEFOG_") != std::string::npos,
                     "a refusal must name the variable");
    return 0;
  }
  // What the engine and NeighborExchange do with the cycle time: a fusion
  // window closes one cycle after the last request, at most ten after the first.
  using Clock = std::chrono::steady_clock;
  const auto cycle = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(config.value().cycle_time_ms));
  const Clock::time_point now = Clock::now();
  FLOCK_FUZZ_CHECK(std::min(now + cycle, now + 10 * cycle) >= now, "a deadline before now");
  // The stall times are compared with seconds waited.
  const double waited = std::chrono::duration<double>(now.time_since_epoch()).count();
  (void)(waited >= config.value().stall_warning_s || waited >= config.value().stall_shutdown_s);
  return 0;
}
