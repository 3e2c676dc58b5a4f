// fuzz_engine_ready: an announcement as rank 0's coordinator receives it from
// another rank (engine/wire.h DecodeReady), then what the coordinator does
// with it: compare it with a second rank's announcement, plan fusion, assign
// cache ids and encode the responses every rank decodes. The same bytes as a
// shutdown message (DecodeShutdown: the ranks its sender saw stall) and as a
// withdrawal (DecodeWithdrawal), which the coordinator then applies.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "flock/engine/coordinator.h"
#include "flock/engine/wire.h"
#include "fuzz_check.h"

namespace flock {
namespace {

// The same name announced by the other rank: 4 floats to allreduce.
OpSignature OtherRanksSignature(const std::string& name) {
  return MakeSignature(
      MakeRequest(OpKind::kAllreduce, name, TensorView{nullptr, DataType::kFloat32, {4}}));
}

// Two ranks announce the decoded entries; rank 0 either announces the same
// (the names complete and are fused and cached) or its own allreduce (the
// comparison describes every field that differs).
void Coordinate(const std::vector<ReadyEntry>& entries, bool same_on_both) {
  Coordinator coordinator(2, /*fusion_threshold_bytes=*/1 << 20, /*cache_capacity=*/16);
  std::vector<ReadyEntry> mine = entries;
  if (!same_on_both) {
    for (ReadyEntry& e : mine) {
      e.cache_id = kNotCached;
      e.signature = OtherRanksSignature(e.name);
    }
  }
  const auto now = Clock::now();
  Status from_peer = coordinator.AddReady(1, entries, now);  // unknown cache ids are refused
  FLOCK_FUZZ_CHECK(from_peer.ok() || !from_peer.message().empty(), "refusal without a message");
  (void)coordinator.AddReady(0, mine, now);
  const std::vector<Response> responses = coordinator.TakeResponses();
  FLOCK_FUZZ_CHECK(DecodeResponses(EncodeResponses(responses)).ok(),
                   "the coordinator's own responses must decode");
}

}  // namespace
}  // namespace flock

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flock;
  const std::vector<char> bytes(data, data + size);
  Result<std::vector<int>> stalled = DecodeShutdown(bytes, 4);
  if (stalled.ok()) {
    for (int r : stalled.value()) FLOCK_FUZZ_CHECK(r >= 0 && r < 4, "a rank outside the world");
    FLOCK_FUZZ_CHECK(stalled.value().empty() || EncodeShutdown(stalled.value()) == bytes,
                     "decode then encode changed the shutdown");
  } else {
    FLOCK_FUZZ_CHECK(!stalled.status().message().empty(), "refusal without a message");
  }
  Result<Withdrawal> withdrawal = DecodeWithdrawal(bytes);
  if (withdrawal.ok()) {
    FLOCK_FUZZ_CHECK(EncodeWithdrawal(withdrawal.value()) == bytes,
                     "decode then encode changed the withdrawal");
    Coordinator coordinator(2, 1 << 20, 16);
    coordinator.Withdraw(withdrawal.value());
    FLOCK_FUZZ_CHECK(DecodeResponses(EncodeResponses(coordinator.TakeResponses())).ok(),
                     "the coordinator's withdrawal must decode");
  } else {
    FLOCK_FUZZ_CHECK(!withdrawal.status().message().empty(), "refusal without a message");
  }
  Result<std::vector<ReadyEntry>> entries = DecodeReady(bytes);
  if (!entries.ok()) {
    FLOCK_FUZZ_CHECK(!entries.status().message().empty(), "refusal without a message");
    return 0;
  }
  FLOCK_FUZZ_CHECK(EncodeReady(entries.value()) == bytes, "decode then encode changed the bytes");
  Coordinate(entries.value(), true);
  Coordinate(entries.value(), false);
  return 0;
}
