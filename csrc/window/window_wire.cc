#include "flock/window/window_wire.h"

#include "flock/common/byte_io.h"

namespace flock {
namespace {

Status Bad(const Reader& r, const std::vector<char>& bytes, const std::string& what) {
  return Status::Internal("malformed window message (" + std::to_string(bytes.size()) +
                          " bytes, at byte " + std::to_string(r.position()) + "): " + what);
}

bool HasPayload(WindowMessageType type) {
  return type == WindowMessageType::kPut || type == WindowMessageType::kAccumulate ||
         type == WindowMessageType::kGetReply;
}

bool IsAnswer(WindowMessageType type) {
  return type == WindowMessageType::kAck || type == WindowMessageType::kGetReply ||
         type == WindowMessageType::kGrant;
}

// What the fields of a decoded message must hold (the header is read).
Status CheckFields(const WindowMessage& m) {
  if (static_cast<int>(m.dtype) >= kNumDataTypes)
    return Status::Internal("dtype " + std::to_string(static_cast<int>(m.dtype)) + " is unknown");
  if (m.payload_bytes < 0) return Status::Internal("negative payload size");
  if (!HasPayload(m.type) && (m.payload_bytes != 0 || m.lane_tag >= 0))
    return Status::Internal(std::string(WindowMessageTypeName(m.type)) + " carries no payload");
  if (m.code != StatusCode::kOk && !IsAnswer(m.type))
    return Status::Internal("only answers carry an error");
  const auto code = static_cast<int>(m.code);
  if (code < 0 || code >= kNumStatusCodes) return Status::Internal("unknown status code");
  if (m.code == StatusCode::kOk && !m.error.empty())
    return Status::Internal("an error message with status OK");
  return Status::OK();
}

}  // namespace

const char* WindowMessageTypeName(WindowMessageType type) {
  switch (type) {
    case WindowMessageType::kPut: return "put";
    case WindowMessageType::kAccumulate: return "accumulate";
    case WindowMessageType::kAck: return "ack";
    case WindowMessageType::kGetRequest: return "get request";
    case WindowMessageType::kGetReply: return "get reply";
    case WindowMessageType::kLock: return "lock";
    case WindowMessageType::kGrant: return "grant";
    case WindowMessageType::kUnlock: return "unlock";
  }
  return "unknown";
}

std::vector<char> EncodeWindowMessage(const WindowMessage& m) {
  Writer w;
  w.Put(m.type);
  w.PutString(m.window);
  w.Put(m.op);
  w.Put(m.dtype);
  w.Put(m.payload_bytes);
  w.Put(m.lane_tag);
  const uint8_t flags = (m.require_mutex ? 1 : 0) | (m.with_p ? 2 : 0);
  w.Put(flags);
  w.Put(m.p);
  w.Put(m.code);
  w.PutString(m.error);
  if (HasPayload(m.type) && m.lane_tag < 0 && m.payload_bytes > 0)
    w.PutBytes(m.payload, static_cast<size_t>(m.payload_bytes));
  return w.Take();
}

Result<WindowMessage> DecodeWindowMessage(const std::shared_ptr<const std::vector<char>>& bytes) {
  const std::vector<char>& b = *bytes;
  Reader r(b);
  WindowMessage m;
  uint8_t flags = 0;
  if (!r.Get(&m.type) || !r.GetString(&m.window) || !r.Get(&m.op) || !r.Get(&m.dtype) ||
      !r.Get(&m.payload_bytes) || !r.Get(&m.lane_tag) || !r.Get(&flags) || !r.Get(&m.p) ||
      !r.Get(&m.code) || !r.GetString(&m.error)) {
    return Bad(r, b, "the header is cut off");
  }
  if (m.type < WindowMessageType::kPut || m.type > WindowMessageType::kUnlock)
    return Bad(r, b, "type " + std::to_string(static_cast<int>(m.type)) + " is unknown");
  if (flags > 3) return Bad(r, b, "unknown flags " + std::to_string(flags));
  m.require_mutex = (flags & 1) != 0;
  m.with_p = (flags & 2) != 0;
  Status fields = CheckFields(m);
  if (!fields.ok()) return Bad(r, b, fields.message());
  if (HasPayload(m.type) && m.lane_tag < 0) {
    if (static_cast<uint64_t>(m.payload_bytes) != r.remaining())
      return Bad(r, b, "the inline payload is not " + std::to_string(m.payload_bytes) + " bytes");
    m.payload = b.data() + r.position();
    r.Skip(r.remaining());
  }
  if (!r.done()) return Bad(r, b, std::to_string(r.remaining()) + " bytes after the end");
  return m;
}

}  // namespace flock
