#include "flock/engine/wire.h"

#include "flock/common/byte_io.h"

namespace flock {
namespace {

// The smallest encodings of an entry (name length, cache id, call) and of a
// response (type, kind, three counts, error length, code, call): a count the
// rest of the message cannot hold is refused before anything is allocated for it.
constexpr size_t kMinEntryBytes = sizeof(uint32_t) + sizeof(int32_t) + sizeof(int64_t);
constexpr size_t kMinResponseBytes = sizeof(ResponseType) + sizeof(OpKind) + 4 * sizeof(uint32_t) +
                                     sizeof(StatusCode) + sizeof(int64_t);

// What a decoder reports; the caller adds which rank sent the message.
Status Malformed(const char* message, const std::vector<char>& bytes, const Reader& r,
                 const std::string& what) {
  return Status::Internal(std::string("malformed engine ") + message + " message (" +
                          std::to_string(bytes.size()) + " bytes, at byte " +
                          std::to_string(r.position()) + "): " + what);
}

Status Cut(const char* what) {
  return Status::Internal(std::string(what) + " is cut off");
}

Status ReadEntry(Reader& r, ReadyEntry* e) {
  if (!r.GetString(&e->name)) return Cut("its name");
  if (!r.Get(&e->cache_id)) return Cut("its cache id");
  if (e->cache_id < kDoNotCache) {
    return Status::Internal("cache id " + std::to_string(e->cache_id) + " is not valid");
  }
  if (!r.Get(&e->call)) return Cut("its call number");
  if (e->call < -1) return Status::Internal("call " + std::to_string(e->call) + " is not valid");
  if (e->cache_id >= 0) return Status::OK();
  if (!r.Get(&e->signature)) return Cut("its signature");
  Status valid = CheckSignature(e->signature);
  return valid.ok() ? valid : Status::Internal("signature: " + valid.message());
}

// What the engine relies on when it handles a response (engine.cc, executor.cc).
Status CheckResponse(const Response& resp) {
  const auto code = static_cast<int>(resp.code);
  if (code < 0 || code >= kNumStatusCodes) {
    return Status::Internal("status code " + std::to_string(code) + " is not valid");
  }
  if (resp.type == ResponseType::kExecute && (resp.names.empty() || code != 0)) {
    return Status::Internal("an execute response needs names and status OK");
  }
  if (resp.type == ResponseType::kError && code == 0) {
    return Status::Internal("an error response has status OK");
  }
  if (resp.type == ResponseType::kWithdrawn &&
      (resp.names.size() != 1 || resp.call < 0 || code == 0 || !IsNeighborOp(resp.kind))) {
    return Status::Internal("a withdrawal needs one neighbor op, a call >= 0 and an error");
  }
  if (!resp.cache_ids.empty() && resp.cache_ids.size() != resp.names.size()) {
    return Status::Internal(std::to_string(resp.cache_ids.size()) + " cache ids for " +
                            std::to_string(resp.names.size()) + " names");
  }
  for (int32_t id : resp.cache_ids) {
    if (id < -1) return Status::Internal("cache id " + std::to_string(id) + " is not valid");
  }
  for (int64_t rows : resp.first_dims) {
    if (rows < 0) return Status::Internal("first dim " + std::to_string(rows) + " is negative");
  }
  if (!Fusable(resp.kind) && resp.type == ResponseType::kExecute && resp.names.size() != 1) {
    return Status::Internal(std::string(OpKindName(resp.kind)) +
                            " is never fused, but this execute response names " +
                            std::to_string(resp.names.size()) + " tensors");
  }
  return Status::OK();
}

Status ReadResponse(Reader& r, Response* resp) {
  if (!r.Get(&resp->type) || !r.Get(&resp->kind)) return Cut("its type or op");
  if (resp->type > ResponseType::kWithdrawn) {
    return Status::Internal("type " + std::to_string(static_cast<int>(resp->type)) +
                            " is not valid");
  }
  if (!IsOpKind(static_cast<int64_t>(resp->kind))) {
    return Status::Internal("op kind " + std::to_string(static_cast<int64_t>(resp->kind)) +
                            " is not valid");
  }
  uint32_t names = 0;
  if (!r.GetCount(&names, sizeof(uint32_t))) return Cut("its name count");
  resp->names.resize(names);
  for (std::string& name : resp->names) {
    if (!r.GetString(&name)) return Cut("a name");
  }
  if (!r.GetVector(&resp->cache_ids) || !r.GetVector(&resp->first_dims)) {
    return Cut("its cache ids or first dims");
  }
  if (!r.GetString(&resp->error) || !r.Get(&resp->code)) return Cut("its error");
  if (!r.Get(&resp->call)) return Cut("its call number");
  return CheckResponse(*resp);
}

}  // namespace

std::vector<char> EncodeReady(const std::vector<ReadyEntry>& entries) {
  Writer w;
  w.Put(static_cast<uint32_t>(entries.size()));
  for (const ReadyEntry& e : entries) {
    w.PutString(e.name);
    w.Put(e.cache_id);
    w.Put(e.call);
    if (e.cache_id < 0) w.Put(e.signature);
  }
  return w.Take();
}

Result<std::vector<ReadyEntry>> DecodeReady(const std::vector<char>& bytes) {
  Reader r(bytes);
  uint32_t count = 0;
  if (!r.GetCount(&count, kMinEntryBytes)) {
    return Malformed("ready", bytes, r, "the entry count is cut off or exceeds the message");
  }
  std::vector<ReadyEntry> entries(count);
  for (uint32_t i = 0; i < count; ++i) {
    Status read = ReadEntry(r, &entries[i]);
    if (!read.ok()) {
      return Malformed(
          "ready", bytes, r,
          "entry " + std::to_string(i) + " of " + std::to_string(count) + ": " + read.message());
    }
  }
  if (!r.done()) {
    return Malformed("ready", bytes, r, std::to_string(r.remaining()) + " bytes after the end");
  }
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
    w.Put(resp.call);
  }
  return w.Take();
}

Result<std::vector<Response>> DecodeResponses(const std::vector<char>& bytes) {
  Reader r(bytes);
  uint32_t count = 0;
  if (!r.GetCount(&count, kMinResponseBytes)) {
    return Malformed("response", bytes, r, "the response count is cut off or exceeds the message");
  }
  std::vector<Response> responses(count);
  for (uint32_t i = 0; i < count; ++i) {
    Status read = ReadResponse(r, &responses[i]);
    if (!read.ok()) {
      return Malformed(
          "response", bytes, r,
          "response " + std::to_string(i) + " of " + std::to_string(count) + ": " + read.message());
    }
  }
  if (!r.done()) {
    return Malformed("response", bytes, r, std::to_string(r.remaining()) + " bytes after the end");
  }
  return responses;
}

std::vector<char> EncodeShutdown(const std::vector<int>& stalled_ranks) {
  if (stalled_ranks.empty()) return {};
  Writer w;
  std::vector<int32_t> ranks(stalled_ranks.begin(), stalled_ranks.end());
  w.PutVector(ranks);
  return w.Take();
}

Result<std::vector<int>> DecodeShutdown(const std::vector<char>& bytes, int size) {
  if (bytes.empty()) return std::vector<int>{};
  Reader r(bytes);
  std::vector<int32_t> ranks;
  if (!r.GetVector(&ranks)) return Malformed("shutdown", bytes, r, "the rank list is cut off");
  if (!r.done()) {
    return Malformed("shutdown", bytes, r, std::to_string(r.remaining()) + " bytes after the end");
  }
  for (int32_t rank : ranks) {
    if (rank < 0 || rank >= size) {
      return Malformed(
          "shutdown", bytes, r,
          "rank " + std::to_string(rank) + " is not in [0, " + std::to_string(size) + ")");
    }
  }
  return std::vector<int>(ranks.begin(), ranks.end());
}

std::vector<char> EncodeWithdrawal(const Withdrawal& withdrawal) {
  Writer w;
  w.PutString(withdrawal.name);
  w.PutString(withdrawal.match_name);
  w.Put(withdrawal.call);
  w.Put(withdrawal.kind);
  w.PutString(withdrawal.reason);
  return w.Take();
}

Result<Withdrawal> DecodeWithdrawal(const std::vector<char>& bytes) {
  Reader r(bytes);
  Withdrawal w;
  if (!r.GetString(&w.name) || !r.GetString(&w.match_name) || !r.Get(&w.call) || !r.Get(&w.kind) ||
      !r.GetString(&w.reason)) {
    return Malformed("withdrawal", bytes, r, "a field is cut off");
  }
  if (!r.done()) {
    return Malformed("withdrawal", bytes, r,
                     std::to_string(r.remaining()) + " bytes after the end");
  }
  if (!IsOpKind(static_cast<int64_t>(w.kind)) || !IsNeighborOp(w.kind) || w.call < 0 ||
      w.name.empty() || w.match_name.empty() || w.reason.empty()) {
    return Malformed("withdrawal", bytes, r,
                     "it needs a neighbor op, a call >= 0, two names and a reason");
  }
  return w;
}

}  // namespace flock
