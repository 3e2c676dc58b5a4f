// WindowTable: the windows this rank created, by name (thread-safe). Callers
// look them up to submit ops and to update them; the engine thread to apply
// what arrives. A freed window leaves the table at once and lives on while an
// op in flight or a reader still holds it.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flock/common/status.h"
#include "flock/window/window.h"

namespace flock {

class WindowTable {
 public:
  Status Add(std::shared_ptr<Window> window) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (FindLocked(window->name()) != windows_.end())
      return Status::InvalidArgument("window '" + window->name() + "' already exists");
    windows_.push_back(std::move(window));
    return Status::OK();
  }
  std::shared_ptr<Window> Find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = FindLocked(name);
    return it == windows_.end() ? nullptr : *it;
  }
  std::shared_ptr<Window> Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = FindLocked(name);
    if (it == windows_.end()) return nullptr;
    std::shared_ptr<Window> removed = std::move(*it);
    windows_.erase(it);
    return removed;
  }
  // In creation order (get_current_created_window_names).
  std::vector<std::string> Names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& w : windows_) names.push_back(w->name());
    return names;
  }
  bool empty() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return windows_.empty();
  }

 private:
  std::vector<std::shared_ptr<Window>>::const_iterator FindLocked(const std::string& name) const {
    return std::find_if(windows_.begin(), windows_.end(),
                        [&](const std::shared_ptr<Window>& w) { return w->name() == name; });
  }

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Window>> windows_;  // few: a linear search is fine
};

}  // namespace flock
