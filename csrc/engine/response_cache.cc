#include "flock/engine/response_cache.h"

#include <cstring>

namespace flock {

bool SameSignature(const OpSignature& a, const OpSignature& b) {
  return std::memcmp(&a, &b, sizeof(OpSignature)) == 0;  // a POD of int64s: no padding
}

int32_t ResponseCache::Lookup(const std::string& name, const OpSignature& signature) const {
  auto it = ids_.find(name);
  if (it == ids_.end() || !SameSignature(entries_[it->second].signature, signature)) return -1;
  return it->second;
}

const OpSignature* ResponseCache::Find(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= entries_.size()) return nullptr;
  return &entries_[id].signature;
}

int32_t ResponseCache::Assign(const std::string& name, const OpSignature& signature) {
  auto it = ids_.find(name);
  if (it != ids_.end()) {
    entries_[it->second].signature = signature;
    return it->second;
  }
  if (entries_.size() >= capacity_) return -1;
  const auto id = static_cast<int32_t>(entries_.size());
  entries_.push_back({name, signature});
  ids_.emplace(name, id);
  return id;
}

bool ResponseCache::Store(int32_t id, const std::string& name, const OpSignature& signature) {
  if (id < 0 || static_cast<size_t>(id) > entries_.size()) return false;
  if (static_cast<size_t>(id) == entries_.size()) entries_.emplace_back();
  entries_[id] = {name, signature};
  ids_[name] = id;
  return true;
}

}  // namespace flock
