#include "flock/engine/wire.h"

#include "flock/engine/byte_io.h"

namespace flock {
namespace {

Status Corrupt(const char* what) {
  return Status::Internal(std::string("corrupt engine ") + what + " message");
}

}  // namespace

std::vector<char> EncodeReady(const std::vector<ReadyEntry>& entries) {
  Writer w;
  w.Put(static_cast<uint32_t>(entries.size()));
  for (const ReadyEntry& e : entries) {
    w.PutString(e.name);
    w.Put(e.cache_id);
    if (e.cache_id < 0) w.Put(e.signature);
  }
  return w.Take();
}

Result<std::vector<ReadyEntry>> DecodeReady(const std::vector<char>& bytes) {
  Reader r(bytes);
  uint32_t count = 0;
  if (!r.Get(&count)) return Corrupt("ready");
  std::vector<ReadyEntry> entries(count);
  for (ReadyEntry& e : entries) {
    if (!r.GetString(&e.name) || !r.Get(&e.cache_id)) return Corrupt("ready");
    if (e.cache_id < 0 && !r.Get(&e.signature)) return Corrupt("ready");
  }
  if (!r.done()) return Corrupt("ready");
  return entries;
}

std::vector<char> EncodeResponses(const std::vector<Response>& responses) {
  Writer w;
  w.Put(static_cast<uint32_t>(responses.size()));
  for (const Response& resp : responses) {
    w.Put(resp.type);
    w.Put(resp.kind);
    w.Put(static_cast<uint32_t>(resp.names.size()));
    for (const std::string& name : resp.names) w.PutString(name);
    w.PutVector(resp.cache_ids);
    w.PutVector(resp.first_dims);
    w.PutString(resp.error);
    w.Put(resp.code);
  }
  return w.Take();
}

Result<std::vector<Response>> DecodeResponses(const std::vector<char>& bytes) {
  Reader r(bytes);
  uint32_t count = 0;
  if (!r.Get(&count)) return Corrupt("response");
  std::vector<Response> responses(count);
  for (Response& resp : responses) {
    uint32_t names = 0;
    if (!r.Get(&resp.type) || !r.Get(&resp.kind) || !r.Get(&names)) return Corrupt("response");
    resp.names.resize(names);
    for (std::string& name : resp.names) {
      if (!r.GetString(&name)) return Corrupt("response");
    }
    if (!r.GetVector(&resp.cache_ids) || !r.GetVector(&resp.first_dims) ||
        !r.GetString(&resp.error) || !r.Get(&resp.code)) {
      return Corrupt("response");
    }
  }
  if (!r.done()) return Corrupt("response");
  return responses;
}

}  // namespace flock
