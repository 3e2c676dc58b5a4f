// Wire format of the messages neighbor ops exchange (pure; no transport here).
//
// One control message goes from a rank to one neighbour per engine cycle and
// carries any number of entries, each about one call, identified by
// (name, seq) — seq = how many times this rank submitted that name before:
//   kData    the sender's tensor for that call: its kind, dtype, shape, the
//            scale the receiver must apply (the sender's dst weight) and
//            either the bytes inline or the tag of a separate data message
//            (a "lane") that follows on the neighbor communicator.
//   kExpect  the receiver's notice that it expects the sender's data for that
//            call (enable_topo_check), with its own kind, dtype and shape so
//            the sender can check them too.
//   kReject  the call failed between these two ranks: the message says why.
//   kGoodbye the sender shut down: it is the last entry it sends this rank, so
//            every call still waiting for the sender fails instead of hanging.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/status.h"

namespace flock {

enum class NeighborEntryType : uint8_t { kData = 1, kExpect = 2, kReject = 3, kGoodbye = 4 };

struct NeighborEntry {
  NeighborEntryType type = NeighborEntryType::kData;
  std::string name;
  int64_t seq = 0;
  uint8_t kind = 0;  // OpKind of the call
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  double scale = 1.0;     // kData
  bool check = false;     // kData: the sender's enable_topo_check
  int32_t lane_tag = -1;  // kData: >= 0: the bytes follow on this tag
  int64_t payload_bytes = 0;
  // kData inline: where the bytes sit in the decoded message (Encode: where to copy them from).
  const char* payload = nullptr;
  StatusCode code = StatusCode::kOk;  // kReject
  std::string message;                // kReject
};

// The bytes of inline payloads are copied into the message.
std::vector<char> EncodeNeighborMessage(const std::vector<NeighborEntry>& entries);

// Decoded entries point into `*bytes` for inline payloads: keep it alive while they are used.
// Decoding also checks what delivery relies on: a known type and dtype, dims >= 0, a kData
// entry's payload_bytes equal to its shape's size in its dtype, a rejection's code not OK.
// A malformed message is an Internal error naming the entry, the field and the byte; the
// caller names the sender.
Result<std::vector<NeighborEntry>> DecodeNeighborMessage(
    const std::shared_ptr<const std::vector<char>>& bytes);

}  // namespace flock
