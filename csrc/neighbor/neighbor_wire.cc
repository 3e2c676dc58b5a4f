#include "flock/neighbor/neighbor_wire.h"

#include "flock/common/byte_io.h"
#include "flock/common/tensor_view.h"

namespace flock {
namespace {

constexpr uint32_t kMagic = 0x464e4252;  // "FNBR"
// Inline payloads start at a multiple of 8 bytes into the message, so the
// receiver reduces from them in place (message buffers come from the heap,
// aligned to at least 16).
constexpr size_t kPayloadAlignment = 8;

// The smallest entry: type, name length, seq, kind, dtype, shape length.
constexpr size_t kMinEntryBytes = sizeof(NeighborEntryType) + sizeof(uint32_t) + sizeof(int64_t) +
                                  sizeof(uint8_t) + sizeof(DataType) + sizeof(uint32_t);

// What the decoder reports; the caller adds which rank sent the message.
Status Malformed(const std::vector<char>& bytes, const Reader& r, const std::string& what) {
  return Status::Internal("malformed neighbor-op message (" + std::to_string(bytes.size()) +
                          " bytes, at byte " + std::to_string(r.position()) + "): " + what);
}

Status Cut(const char* what) {
  return Status::Internal(std::string(what) + " is cut off");
}

// Delivery sizes its buffers from the shape and the dtype (`tensor_bytes`) and
// moves payload_bytes, so the two must agree.
Status ReadData(Reader& r, const std::vector<char>& bytes, int64_t tensor_bytes, NeighborEntry* e) {
  uint8_t check = 0;
  if (!r.Get(&e->scale) || !r.Get(&check) || !r.Get(&e->lane_tag) || !r.Get(&e->payload_bytes)) {
    return Cut("its data header");
  }
  e->check = check != 0;
  if (e->payload_bytes != tensor_bytes) {
    return Status::Internal(std::to_string(e->payload_bytes) + " payload bytes for a " +
                            DataTypeName(e->dtype) + " tensor of shape " + ShapeToString(e->shape));
  }
  if (e->lane_tag < -1) {
    return Status::Internal("lane tag " + std::to_string(e->lane_tag) + " is not valid");
  }
  if (e->lane_tag >= 0) return Status::OK();
  const int64_t at =
      r.Align(kPayloadAlignment) ? r.Skip(static_cast<size_t>(e->payload_bytes)) : -1;
  if (at < 0) return Cut("its payload");
  e->payload = bytes.data() + at;
  return Status::OK();
}

Status ReadEntry(Reader& r, const std::vector<char>& bytes, NeighborEntry* e) {
  if (!r.Get(&e->type) || !r.GetString(&e->name) || !r.Get(&e->seq) || !r.Get(&e->kind) ||
      !r.Get(&e->dtype) || !r.GetVector(&e->shape)) {
    return Cut("its header");
  }
  if (static_cast<int>(e->dtype) >= kNumDataTypes) {
    return Status::Internal("dtype " + std::to_string(static_cast<int>(e->dtype)) +
                            " is not valid");
  }
  const std::optional<int64_t> size = CheckedSizeBytes(e->dtype, e->shape.data(), e->shape.size());
  if (!size) {
    return Status::Internal("shape " + ShapeToString(e->shape) +
                            " has a negative dim or more than 2^63 bytes");
  }
  switch (e->type) {
    case NeighborEntryType::kData: return ReadData(r, bytes, *size, e);
    case NeighborEntryType::kExpect:
    case NeighborEntryType::kGoodbye: return Status::OK();
    case NeighborEntryType::kReject: {
      if (!r.Get(&e->code) || !r.GetString(&e->message)) return Cut("its rejection");
      const auto code = static_cast<int>(e->code);
      if (code > 0 && code < kNumStatusCodes) return Status::OK();
      return Status::Internal("a rejection with status code " + std::to_string(code));
    }
  }
  return Status::Internal("entry type " + std::to_string(static_cast<int>(e->type)) +
                          " is not valid");
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
  if (!r.Get(&magic) || magic != kMagic) {
    return Malformed(*bytes, r, "it does not start with the neighbor-op magic number");
  }
  if (!r.GetCount(&count, kMinEntryBytes)) {
    return Malformed(*bytes, r, "the entry count is cut off or exceeds the message");
  }
  std::vector<NeighborEntry> entries(count);
  for (uint32_t i = 0; i < count; ++i) {
    Status read = ReadEntry(r, *bytes, &entries[i]);
    if (!read.ok()) {
      return Malformed(
          *bytes, r,
          "entry " + std::to_string(i) + " of " + std::to_string(count) + ": " + read.message());
    }
  }
  if (!r.done())
    return Malformed(*bytes, r, std::to_string(r.remaining()) + " bytes after the end");
  return entries;
}

}  // namespace flock
