// fuzz_neighbor_message: a fused neighbour control message as the receiving
// rank's engine gets it (neighbor/neighbor_wire.h DecodeNeighborMessage), then
// what delivery (neighbor_delivery.cc) does with each entry once its call is
// found with the same dtype and shape: an inline payload is reduced into the
// call's accumulator or copied into its target, a lane is received into a
// buffer of the call's size, a gathered piece counts shape[0] rows, a
// rejection fails the pair with its code.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "flock/common/weighted_kernels.h"
#include "flock/neighbor/neighbor_wire.h"
#include "fuzz_check.h"

namespace flock {
namespace {

// The element count of `shape`, or -1 when the harness would not allocate it.
int64_t SmallCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > (int64_t{1} << 16) / d)) return -1;
    count *= d;
  }
  return count;
}

void DeliverData(const NeighborEntry& e) {
  const int64_t count = SmallCount(e.shape);
  const size_t elem = DataTypeSize(e.dtype);
  if (count < 0 || elem == 0) return;
  const size_t call_bytes = static_cast<size_t>(count) * elem;
  if (e.lane_tag >= 0) {  // StartRecv(target, payload_bytes): the call's buffer must hold it
    FLOCK_FUZZ_CHECK(static_cast<size_t>(e.payload_bytes) == call_bytes,
                     "a lane's size differs from its shape");
    return;
  }
  // kReduce (Contribute): the call reads `count` elements from the payload.
  std::vector<double> acc(static_cast<size_t>(count));
  (void)WeightedAccumulate(acc.data(), e.payload, e.dtype, e.scale, count);
  // kPlace: the payload is copied into the call's part of the target.
  std::vector<char> target(call_bytes);
  if (e.payload_bytes > 0) std::memcpy(target.data(), e.payload, e.payload_bytes);
  // kGather (FinishStep): shape[0] rows of the other dims make up the piece.
  if (!e.shape.empty() && e.shape[0] > 0) {
    const size_t row_bytes = call_bytes / static_cast<size_t>(e.shape[0]);
    FLOCK_FUZZ_CHECK(
        row_bytes * static_cast<size_t>(e.shape[0]) == static_cast<size_t>(e.payload_bytes),
        "gathered rows differ from the payload");
  }
}

void CheckRoundTrip(const std::vector<NeighborEntry>& entries) {
  // The decoded entries point into the message: it lives as long as they do.
  const auto encoded = std::make_shared<const std::vector<char>>(EncodeNeighborMessage(entries));
  auto again = DecodeNeighborMessage(encoded);
  FLOCK_FUZZ_CHECK(again.ok() && again.value().size() == entries.size(),
                   "a decoded message must encode and decode again");
  for (size_t i = 0; i < entries.size(); ++i) {
    const NeighborEntry& a = entries[i];
    const NeighborEntry& b = again.value()[i];
    FLOCK_FUZZ_CHECK(a.type == b.type && a.name == b.name && a.seq == b.seq && a.shape == b.shape &&
                         a.payload_bytes == b.payload_bytes && a.message == b.message,
                     "the round trip changed an entry");
    if (a.lane_tag < 0 && a.payload_bytes > 0) {
      FLOCK_FUZZ_CHECK(std::memcmp(a.payload, b.payload, a.payload_bytes) == 0,
                       "the round trip changed a payload");
    }
  }
}

}  // namespace
}  // namespace flock

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flock;
  auto bytes = std::make_shared<const std::vector<char>>(data, data + size);
  Result<std::vector<NeighborEntry>> entries = DecodeNeighborMessage(bytes);
  if (!entries.ok()) {
    FLOCK_FUZZ_CHECK(!entries.status().message().empty(), "refusal without a message");
    return 0;
  }
  CheckRoundTrip(entries.value());
  for (const NeighborEntry& e : entries.value()) {
    if (e.type == NeighborEntryType::kData) DeliverData(e);
    if (e.type == NeighborEntryType::kReject) {  // DeliverReject: the pair fails with this status
      FLOCK_FUZZ_CHECK(!Status(e.code, e.message).ok(), "a rejection that is OK");
    }
  }
  return 0;
}
