// Writer / Reader: the flat byte encoding of every engine message (host byte
// order: all ranks of a job run the same build on the same architecture).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace flock {

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
  // Appends raw bytes (a tensor's payload) without a length prefix.
  void PutBytes(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  // Zero bytes up to the next multiple of `alignment` (from the message start),
  // so a payload after it can be read in place as its element type.
  void Align(size_t alignment) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, 0);
  }
  void Reserve(size_t n) { bytes_.reserve(n); }
  std::vector<char> Take() { return std::move(bytes_); }

 private:
  std::vector<char> bytes_;
};

// Reads what Writer wrote. The bytes come from another process, so a length
// read from them is compared with the bytes left (never added to a position,
// which could wrap) and any overrun fails the read: the caller then reports
// the message as malformed.
class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T* value) {
    if (sizeof(T) > remaining()) return false;
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || n > remaining()) return false;
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool GetVector(std::vector<T>* v) {
    uint32_t n = 0;
    if (!Get(&n) || n > remaining() / sizeof(T)) return false;
    v->resize(n);
    for (uint32_t i = 0; i < n; ++i) Get(&(*v)[i]);
    return true;
  }
  // Reads the count of items that each take at least `min_item_bytes`, and
  // fails when the rest of the message cannot hold that many: nothing is
  // allocated for a count a few corrupt bytes made up.
  bool GetCount(uint32_t* n, size_t min_item_bytes) {
    return Get(n) && *n <= remaining() / min_item_bytes;
  }
  // Skips what Writer::Align added (false past the end).
  bool Align(size_t alignment) {
    const size_t at = (pos_ + alignment - 1) / alignment * alignment;
    if (at > bytes_.size()) return false;
    pos_ = at;
    return true;
  }
  // Skips n raw bytes, returning where they start (or -1 past the end).
  int64_t Skip(size_t n) {
    if (n > remaining()) return -1;
    const size_t at = pos_;
    pos_ += n;
    return static_cast<int64_t>(at);
  }
  size_t position() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  const std::vector<char>& bytes_;
  size_t pos_ = 0;
};

}  // namespace flock
