// Unnamed hierarchical calls finishing out of order (ranks played by threads).
// Unnamed calls meet their peers' by call number under one match name, and
// two can be in flight at once: a later call may finish a step before an
// earlier call reaches it, and the earlier call's data, sent by a faster
// peer, must still be taken — not dropped as if that call had ended (the
// mailbox's "done" is per call). Seen in benchmarks/soak.py as wrong slices
// and mismatch errors.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "../support/engine_requests.h"
#include "../support/engines_on_threads.h"
#include "flock/engine/engine.h"
#include "flock/neighbor/op_steps.h"

namespace flock {
namespace {

using testing::Plan;
using testing::WaitFor;

constexpr int kLocalSize = 2;
constexpr int kSize = 4;  // machines {0, 1} and {2, 3}
constexpr int64_t kCount = 1000;

HandleId SubmitUnnamed(Engine& engine, int rank, const std::string& name, std::vector<double>& in,
                       std::vector<double>& out, const NeighborPlan& machine_plan) {
  OpRequest op = MakeRequest(OpKind::kHierarchicalNeighborAllreduce, name,
                             TensorView{in.data(), DataType::kFloat64, {kCount}});
  op.auto_named = true;  // the name is only this rank's; calls match by number
  op.steps = std::make_shared<const std::vector<ExchangeStep>>(HierarchicalSteps(
      machine_plan, kCount, kLocalSize, rank % kLocalSize, rank / kLocalSize, true));
  auto handle =
      engine.Submit(std::move(op), TensorView{out.data(), DataType::kFloat64, {kCount}}, nullptr);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  return handle.ok() ? handle.value() : -1;
}

// Input of rank r: r + k; machine m's mean: 2m + 0.5 + k.
double MachineMean(int machine, int64_t k) {
  return 2.0 * machine + 0.5 + k;
}

TEST(NeighborOvertaking, UnnamedHierarchicalCallsFinishingOutOfOrderAreRight) {
  Config config;
  config.cycle_time_ms = 1.0;
  config.stall_shutdown_s = 10;
  testing::OnRanks(kSize, config, [&](int rank, Engine& engine) {
    const int machine = rank / kLocalSize, other = 1 - machine;
    for (int round = 0; round < 10; ++round) {
      // Machine 1 comes late, so machine 0's first call waits in its machine
      // step while its second call, which needs no other machine, finishes.
      if (machine == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::vector<double> in(kCount), first(kCount, -1), second(kCount, -1);
      for (int64_t k = 0; k < kCount; ++k) in[static_cast<size_t>(k)] = rank + k;
      const std::string n = std::to_string(round);
      HandleId a = SubmitUnnamed(engine, rank, "h." + n + "a", in, first,
                                 Plan(0.5, {{other, 0.5}}, {other}));
      HandleId b = SubmitUnnamed(engine, rank, "h." + n + "b", in, second, Plan(1.0, {}, {}));
      const Status sb = WaitFor(engine, b), sa = WaitFor(engine, a);
      ASSERT_TRUE(sa.ok()) << "rank " << rank << " round " << round << ": " << sa.ToString();
      ASSERT_TRUE(sb.ok()) << "rank " << rank << " round " << round << ": " << sb.ToString();
      for (int64_t k = 0; k < kCount; k += 97) {
        const size_t i = static_cast<size_t>(k);
        ASSERT_DOUBLE_EQ(first[i], 0.5 * MachineMean(machine, k) + 0.5 * MachineMean(other, k))
            << "rank " << rank << " round " << round << " k " << k;
        ASSERT_DOUBLE_EQ(second[i], MachineMean(machine, k)) << "rank " << rank << " k " << k;
      }
    }
  });
}

}  // namespace
}  // namespace flock
