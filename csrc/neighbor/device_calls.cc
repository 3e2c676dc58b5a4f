#include "flock/neighbor/device_calls.h"

namespace flock {

void DeviceCalls::Begin(const OpRequest& op, int64_t call,
                        const std::vector<std::string>& step_keys) {
  auto active = std::make_shared<Active>();
  active->name = op.name;
  active->match_name = NeighborMatchName(op);
  active->call = call;
  active->kind = op.kind;
  active->step_keys = step_keys;
  for (const std::string& key : step_keys) by_step_[key] = active;
  by_call_[{active->match_name, call}] = std::move(active);
}

void DeviceCalls::End(const std::string& match_name, int64_t call) {
  auto it = by_call_.find({match_name, call});
  if (it == by_call_.end()) return;
  for (const std::string& key : it->second->step_keys) by_step_.erase(key);
  by_call_.erase(it);
}

bool DeviceCalls::Intercept(const std::string& key, int from) {
  auto it = by_step_.find(key);
  if (it == by_step_.end()) return false;
  Active& active = *it->second;
  if (active.reported) return true;
  active.reported = true;
  DeviceConflict conflict;
  conflict.name = active.name;
  conflict.match_name = active.match_name;
  conflict.call = active.call;
  conflict.kind = active.kind;
  conflict.reason = std::string(OpKindName(active.kind)) + " '" + active.name + "' (call " +
                    std::to_string(active.call) + " of '" + active.match_name +
                    "'): the ranks disagree on the device of its tensors: rank " +
                    std::to_string(rank_) + " passed a CUDA tensor, rank " + std::to_string(from) +
                    " a CPU tensor; pass tensors on the same kind of device on every rank";
  conflicts_.push_back(std::move(conflict));
  return true;
}

std::vector<DeviceConflict> DeviceCalls::TakeConflicts() {
  std::vector<DeviceConflict> taken;
  taken.swap(conflicts_);
  return taken;
}

void DeviceCalls::Owe(const std::string& match_name, int64_t call, const Status& status) {
  owed_.emplace(CallId{match_name, call}, status);
}

Status DeviceCalls::TakeOwed(const std::string& match_name, int64_t call) {
  if (owed_.empty()) return Status::OK();
  auto it = owed_.find({match_name, call});
  if (it == owed_.end()) return Status::OK();
  Status status = it->second;
  owed_.erase(it);
  return status;
}

}  // namespace flock
