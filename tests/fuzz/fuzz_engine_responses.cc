// fuzz_engine_responses: the coordinator's responses as every other rank
// receives them (engine/wire.h DecodeResponses), then what that rank's engine
// reads from them (engine/executor.cc, engine.cc Handle): the batch's first
// name, the cache ids it stores, an allgather's first dims for the output
// layout, an error's code and message.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "flock/collectives/collectives.h"
#include "flock/engine/response_cache.h"
#include "flock/engine/wire.h"
#include "fuzz_check.h"

namespace flock {
namespace {

constexpr size_t kGroupSize = 2;  // the ranks of the group an allgather runs over

void Execute(const Response& response, ResponseCache& cache) {
  // Execute(): the batch is the names, looked up in order; the op runs on the first.
  const std::string& first = response.names.front();
  for (size_t i = 0; i < response.names.size() && i < response.cache_ids.size(); ++i)
    (void)cache.Store(response.cache_ids[i], response.names[i], OpSignature{});
  if (response.kind != OpKind::kAllgather) return;
  // Allgather(): one first dim per rank of the group (else refused), rows of 3 floats.
  if (response.first_dims.size() != kGroupSize) return;
  Result<GatherLayout> layout = PlanGather(DataType::kFloat32, {1, 3}, response.first_dims);
  FLOCK_FUZZ_CHECK(layout.ok() || !layout.status().message().empty(), "refusal without a message");
  if (layout.ok() && layout.value().total_bytes <= (1 << 20)) {
    std::vector<char> output(static_cast<size_t>(layout.value().total_bytes));
  }
  (void)first;
}

}  // namespace
}  // namespace flock

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flock;
  const std::vector<char> bytes(data, data + size);
  Result<std::vector<Response>> responses = DecodeResponses(bytes);
  if (!responses.ok()) {
    FLOCK_FUZZ_CHECK(!responses.status().message().empty(), "refusal without a message");
    return 0;
  }
  FLOCK_FUZZ_CHECK(EncodeResponses(responses.value()) == bytes,
                   "decode then encode changed the bytes");
  ResponseCache cache;
  for (const Response& response : responses.value()) {
    switch (response.type) {
      case ResponseType::kExecute: Execute(response, cache); break;
      case ResponseType::kError:
        // Handle(): the requests named fail with this status.
        FLOCK_FUZZ_CHECK(!Status(response.code, response.error).ok(), "an error that is OK");
        break;
      case ResponseType::kWithdrawn:  // WithdrawCall(): one neighbor op's call fails
        FLOCK_FUZZ_CHECK(response.names.size() == 1 && response.call >= 0 &&
                             IsNeighborOp(response.kind) &&
                             !Status(response.code, response.error).ok(),
                         "a withdrawal the engine cannot apply");
        break;
      case ResponseType::kShuttingDown:
      case ResponseType::kFinal: break;
    }
  }
  return 0;
}
