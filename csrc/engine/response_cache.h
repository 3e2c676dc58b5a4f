// Response cache: once a name has executed with a signature, later rounds
// name it by a small integer id instead of sending the whole signature.
//
// The coordinator assigns ids when it decides to execute a name and sends them
// in the response; every rank stores them in the same order, so all copies of
// the cache agree. A changed signature (say, a new shape) is sent in full and,
// once executed, replaces the cached one under the same id.
//
// The coordinator's copy holds at most `capacity` names: past that, new names
// are simply not cached (no eviction, so the copies never need to agree on
// what to forget). Auto-named requests are never cached: their names do not
// repeat, and caching them would grow the cache by one entry per call.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "flock/requests/op_signature.h"

namespace flock {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity = kUnbounded) : capacity_(capacity) {}
  static constexpr size_t kUnbounded = static_cast<size_t>(-1);

  // The id under which `name` is cached with exactly `signature`, or -1.
  int32_t Lookup(const std::string& name, const OpSignature& signature) const;
  // The cached signature of id; nullptr for an unknown id.
  const OpSignature* Find(int32_t id) const;
  // Coordinator: the id for name (new or existing), now holding `signature`;
  // -1 when name is new and the cache is full.
  int32_t Assign(const std::string& name, const OpSignature& signature);
  // Worker: records what the coordinator assigned. The coordinator hands out
  // ids 0, 1, 2, ... in the order every rank stores them, so an id past the
  // next one is refused (false) instead of growing the cache to it: that rank
  // then keeps sending the name's full signature, which always works.
  bool Store(int32_t id, const std::string& name, const OpSignature& signature);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string name;
    OpSignature signature;
  };
  size_t capacity_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<Entry> entries_;
};

bool SameSignature(const OpSignature& a, const OpSignature& b);

}  // namespace flock
