#include "flock/transport/mpi/idle_yield_switch.h"

#include <dlfcn.h>

namespace flock {

IdleYieldSwitch::SetFn IdleYieldSwitch::FindOpenMpiSwitch() {
  return reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "opal_progress_set_yield_when_idle"));
}

IdleYieldSwitch::SetFn IdleYieldSwitch::IfConfigured(SetFn set) {
  if (set == nullptr) return nullptr;
  // The only way to read the setting is to set it: put it back at once.
  const bool configured = set(false);
  set(configured);
  return configured ? set : nullptr;  // with yielding off there is nothing to switch
}

IdleYieldSwitch::IdleYieldSwitch(SetFn set) : set_(IfConfigured(set)) {}

void IdleYieldSwitch::BeginPolling() {
  if (set_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (polling_depth_++ == 0 && blocking_calls_ == 0) set_(false);
}

void IdleYieldSwitch::EndPolling() {
  if (set_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (--polling_depth_ == 0 && blocking_calls_ == 0) set_(true);
}

IdleYieldSwitch::Blocking::Blocking(IdleYieldSwitch& owner) : owner_(owner) {
  if (owner_.set_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_.mutex_);
  if (owner_.blocking_calls_++ == 0 && owner_.polling_depth_ > 0) owner_.set_(true);
}

IdleYieldSwitch::Blocking::~Blocking() {
  if (owner_.set_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_.mutex_);
  if (--owner_.blocking_calls_ == 0 && owner_.polling_depth_ > 0) owner_.set_(false);
}

}  // namespace flock
