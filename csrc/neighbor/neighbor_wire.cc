#include "flock/neighbor/neighbor_wire.h"

#include "flock/engine/byte_io.h"

namespace flock {
namespace {

constexpr uint32_t kMagic = 0x464e4252;  // "FNBR"
// Inline payloads start at a multiple of 8 bytes into the message, so the
// receiver reduces from them in place (message buffers come from the heap,
// aligned to at least 16).
constexpr size_t kPayloadAlignment = 8;

Status Corrupt() {
  return Status::Internal("corrupt neighbor-op message");
}

}  // namespace

std::vector<char> EncodeNeighborMessage(const std::vector<NeighborEntry>& entries) {
  Writer w;
  size_t payload = 0;
  for (const NeighborEntry& e : entries) payload += e.lane_tag < 0 ? e.payload_bytes : 0;
  w.Reserve(payload + (128 + kPayloadAlignment) * entries.size() + 8);
  w.Put(kMagic);
  w.Put(static_cast<uint32_t>(entries.size()));
  for (const NeighborEntry& e : entries) {
    w.Put(e.type);
    w.PutString(e.name);
    w.Put(e.seq);
    w.Put(e.kind);
    w.Put(e.dtype);
    w.PutVector(e.shape);
    switch (e.type) {
      case NeighborEntryType::kData:
        w.Put(e.scale);
        w.Put(static_cast<uint8_t>(e.check));
        w.Put(e.lane_tag);
        w.Put(e.payload_bytes);
        if (e.lane_tag < 0) {
          w.Align(kPayloadAlignment);
          w.PutBytes(e.payload, static_cast<size_t>(e.payload_bytes));
        }
        break;
      case NeighborEntryType::kExpect:
      case NeighborEntryType::kGoodbye: break;
      case NeighborEntryType::kReject:
        w.Put(e.code);
        w.PutString(e.message);
        break;
    }
  }
  return w.Take();
}

Result<std::vector<NeighborEntry>> DecodeNeighborMessage(
    const std::shared_ptr<const std::vector<char>>& bytes) {
  Reader r(*bytes);
  uint32_t magic = 0, count = 0;
  if (!r.Get(&magic) || magic != kMagic || !r.Get(&count)) return Corrupt();
  std::vector<NeighborEntry> entries(count);
  for (NeighborEntry& e : entries) {
    if (!r.Get(&e.type) || !r.GetString(&e.name) || !r.Get(&e.seq) || !r.Get(&e.kind) ||
        !r.Get(&e.dtype) || !r.GetVector(&e.shape)) {
      return Corrupt();
    }
    switch (e.type) {
      case NeighborEntryType::kData: {
        uint8_t check = 0;
        if (!r.Get(&e.scale) || !r.Get(&check) || !r.Get(&e.lane_tag) || !r.Get(&e.payload_bytes) ||
            e.payload_bytes < 0) {
          return Corrupt();
        }
        e.check = check != 0;
        if (e.lane_tag < 0) {
          if (!r.Align(kPayloadAlignment)) return Corrupt();
          const int64_t at = r.Skip(static_cast<size_t>(e.payload_bytes));
          if (at < 0) return Corrupt();
          e.payload = bytes->data() + at;
        }
        break;
      }
      case NeighborEntryType::kExpect:
      case NeighborEntryType::kGoodbye: break;
      case NeighborEntryType::kReject:
        if (!r.Get(&e.code) || !r.GetString(&e.message)) return Corrupt();
        break;
      default: return Corrupt();
    }
  }
  if (!r.done()) return Corrupt();
  return entries;
}

}  // namespace flock
