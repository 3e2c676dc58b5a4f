#include "flock/common/config.h"

#include <gtest/gtest.h>

#include <set>

namespace flock {
namespace {

TEST(Config, DefaultsWhenNothingIsSet) {
  Result<Config> config = Config::FromMap({});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config.value().log_level, LogLevel::kWarning);
  EXPECT_EQ(config.value().fusion_threshold_bytes, 64 << 20);
  EXPECT_EQ(config.value().cycle_time_ms, 5.0);
  EXPECT_EQ(config.value().stall_warning_s, 60.0);
  EXPECT_EQ(config.value().stall_shutdown_s, 0.0);
  EXPECT_EQ(config.value().local_size_override, 0);
  EXPECT_TRUE(config.value().timeline_path.empty());
  EXPECT_TRUE(config.value().malloc_tuning);
  EXPECT_TRUE(config.value().user_malloc_setting.empty());
}

TEST(Config, ParsesEverySetting) {
  Result<Config> config = Config::FromMap({{"FLOCK_LOG_LEVEL", "DEBUG"},
                                           {"FLOCK_TIMELINE", "/tmp/t.json"},
                                           {"FLOCK_FUSION_THRESHOLD", "1024"},
                                           {"FLOCK_CYCLE_TIME_MS", "2.5"},
                                           {"FLOCK_STALL_WARNING_S", "3"},
                                           {"FLOCK_STALL_SHUTDOWN_S", "9"},
                                           {"FLOCK_LOCAL_SIZE", "2"},
                                           {"FLOCK_NEIGHBOR_INLINE_BYTES", "4096"},
                                           {"FLOCK_NEIGHBOR_LANE_BUDGET", "0"},
                                           {"FLOCK_CACHE_CAPACITY", "16"},
                                           {"FLOCK_MALLOC_TUNING", "0"},
                                           {"FLOCK_QUIET", "1"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config.value().log_level, LogLevel::kDebug);
  EXPECT_EQ(config.value().timeline_path, "/tmp/t.json");
  EXPECT_EQ(config.value().fusion_threshold_bytes, 1024);
  EXPECT_EQ(config.value().cycle_time_ms, 2.5);
  EXPECT_EQ(config.value().stall_warning_s, 3.0);
  EXPECT_EQ(config.value().stall_shutdown_s, 9.0);
  EXPECT_EQ(config.value().local_size_override, 2);
  EXPECT_EQ(config.value().neighbor_inline_bytes, 4096);
  EXPECT_EQ(config.value().neighbor_lane_budget_bytes, 0);
  EXPECT_EQ(Config::FromMap({}).value().neighbor_lane_budget_bytes, 4 << 20);
  EXPECT_EQ(config.value().cache_capacity, 16);
  EXPECT_FALSE(config.value().malloc_tuning);
  EXPECT_TRUE(config.value().quiet);
  EXPECT_FALSE(Config::FromMap({{"FLOCK_QUIET", "0"}}).value().quiet);
  EXPECT_FALSE(Config::FromMap({{"FLOCK_QUIET", ""}}).value().quiet);
}

// Found by fuzzing (tests/fuzz/config/regressions): the engine converts the
// cycle time into integer nanoseconds and adds ten cycles to a time point.
TEST(Config, ACycleTimeTheClockCannotHoldIsRefused) {
  for (const char* value : {"5e21", "inf", "60001"}) {
    Result<Config> config = Config::FromMap({{"FLOCK_CYCLE_TIME_MS", value}});
    ASSERT_FALSE(config.ok()) << value;
    EXPECT_NE(config.status().message().find("expected a number from 0 to 60000"),
              std::string::npos)
        << config.status().message();
  }
  EXPECT_EQ(Config::FromMap({{"FLOCK_CYCLE_TIME_MS", "60000"}}).value().cycle_time_ms, 60000.0);
  EXPECT_TRUE(
      Config::FromMap({{"FLOCK_STALL_WARNING_S", "1e300"}}).ok());  // compared, not converted
}

TEST(Config, BluefogsMachineSizeIsAnAliasThatFlocksNameOverrides) {
  Config bluefog = Config::FromMap({{"BLUEFOG_NODES_PER_MACHINE", "3"}}).value();
  EXPECT_EQ(bluefog.local_size_override, 3);
  EXPECT_EQ(bluefog.local_size_variable, "BLUEFOG_NODES_PER_MACHINE");
  Config both =
      Config::FromMap({{"BLUEFOG_NODES_PER_MACHINE", "3"}, {"FLOCK_LOCAL_SIZE", "2"}}).value();
  EXPECT_EQ(both.local_size_override, 2);
  EXPECT_EQ(both.local_size_variable, "FLOCK_LOCAL_SIZE");
  Result<Config> bad = Config::FromMap({{"BLUEFOG_NODES_PER_MACHINE", "x"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("BLUEFOG_NODES_PER_MACHINE"), std::string::npos);
}

TEST(Config, TheUsersOwnMallocSettingIsNoted) {
  EXPECT_EQ(Config::FromMap({{"MALLOC_ARENA_MAX", "4"}}).value().user_malloc_setting,
            "MALLOC_ARENA_MAX=4");
  EXPECT_EQ(Config::FromMap({{"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1"}})
                .value()
                .user_malloc_setting,
            "GLIBC_TUNABLES=glibc.malloc.trim_threshold=1");
  // Tunables about something else leave malloc to flock.
  EXPECT_TRUE(Config::FromMap({{"GLIBC_TUNABLES", "glibc.rtld.nns=2"}})
                  .value()
                  .user_malloc_setting.empty());
}

TEST(Config, BadValuesAreErrorsNamingTheVariable) {
  const std::pair<const char*, const char*> bad[] = {
      {"FLOCK_LOG_LEVEL", "loud"},      {"FLOCK_FUSION_THRESHOLD", "12MB"},
      {"FLOCK_FUSION_THRESHOLD", "-1"}, {"FLOCK_CYCLE_TIME_MS", "fast"},
      {"FLOCK_STALL_WARNING_S", "-2"},  {"FLOCK_LOCAL_SIZE", "two"},
      {"FLOCK_STALL_SHUTDOWN_S", ""},   {"FLOCK_CACHE_CAPACITY", "-5"},
      {"FLOCK_MALLOC_TUNING", "2"},     {"FLOCK_DEVICE", "-1"},
      {"FLOCK_DEVICE", "gpu0"},         {"FLOCK_GPU_VIA_MPI", "2"}};
  for (const auto& [name, value] : bad) {
    Result<Config> config = Config::FromMap({{name, value}});
    ASSERT_FALSE(config.ok()) << name << "=" << value;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(name), std::string::npos) << config.status().message();
  }
}

TEST(Config, DeviceDefaultsToTheLocalRanksChoice) {
  EXPECT_EQ(Config::FromMap({}).value().device, -1);
  EXPECT_EQ(Config::FromMap({{"FLOCK_DEVICE", "3"}}).value().device, 3);
  EXPECT_FALSE(Config::FromMap({}).value().gpu_via_mpi);
  EXPECT_TRUE(Config::FromMap({{"FLOCK_GPU_VIA_MPI", "1"}}).value().gpu_via_mpi);
}

TEST(Config, TableListsEverySettingOnce) {
  std::set<std::string> names;
  for (const SettingInfo& s : SettingsTable()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_EQ(std::string(s.name).rfind("FLOCK_", 0), 0u);
    EXPECT_GT(std::string(s.doc).size(), 10u);
  }
  EXPECT_EQ(names.size(), 14u);
}

}  // namespace
}  // namespace flock
