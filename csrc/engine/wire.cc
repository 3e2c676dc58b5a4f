#include "engine/wire.h"

#include <cstring>

namespace flock {
namespace {

class Writer {
 public:
  template <typename T>
  void Put(const T& value) {
    const char* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  template <typename T>
  void PutVector(const std::vector<T>& v) {
    Put(static_cast<uint32_t>(v.size()));
    for (const T& x : v) Put(x);
  }
  std::vector<char> Take() { return std::move(bytes_); }

 private:
  std::vector<char> bytes_;
};

// Reads what Writer wrote; any overrun marks the message as corrupt.
class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T* value) {
    if (pos_ + sizeof(T) > bytes_.size()) return false;
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || pos_ + n > bytes_.size()) return false;
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool GetVector(std::vector<T>* v) {
    uint32_t n = 0;
    if (!Get(&n) || pos_ + static_cast<size_t>(n) * sizeof(T) > bytes_.size()) return false;
    v->resize(n);
    for (uint32_t i = 0; i < n; ++i) Get(&(*v)[i]);
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  const std::vector<char>& bytes_;
  size_t pos_ = 0;
};

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
