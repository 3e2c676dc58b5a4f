// DeviceCalls: the neighbor ops this rank runs on the device path (CUDA
// tensors, negotiated through rank 0: engine.cc), as the host path sees them.
//
// Both paths number the calls of a match name alike (NeighborExchange), so
// call k of a name is the same call on every rank whatever its tensor's
// device. While this rank's call k runs on the device path, a peer's host-path
// entry for it (data, an expectation, a rejection) shows that the ranks
// disagree on the device: a conflict, noted once per call, which the engine
// reports to rank 0 (Coordinator::Withdraw). Rank 0's answer fails the call on
// every rank; a rank that has not reached it yet keeps it here as owed and
// fails the call when it gets there.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flock/common/status.h"
#include "flock/requests/op_signature.h"

namespace flock {

struct DeviceConflict {
  std::string name;        // the op's name, as announced to rank 0
  std::string match_name;  // NeighborMatchName
  int64_t call = 0;
  OpKind kind = OpKind::kNeighborAllreduce;
  std::string reason;  // the error every rank gets
};

class DeviceCalls {
 public:
  explicit DeviceCalls(int rank) : rank_(rank) {}

  // Call `call` of `op` runs on the device path; `step_keys`: its steps' keys.
  void Begin(const OpRequest& op, int64_t call, const std::vector<std::string>& step_keys);
  void End(const std::string& match_name, int64_t call);
  // A host-path entry from rank `from` for step `key`: true when the step is a
  // device call's (a conflict is noted, once per call).
  bool Intercept(const std::string& key, int from);
  std::vector<DeviceConflict> TakeConflicts();

  // Rank 0 withdrew a call this rank has not reached: it fails with `status`.
  void Owe(const std::string& match_name, int64_t call, const Status& status);
  // The status of an owed call (and forgets it); OK when the call is not owed.
  Status TakeOwed(const std::string& match_name, int64_t call);

  bool empty() const { return by_step_.empty(); }
  size_t owed() const { return owed_.size(); }

 private:
  struct Active {
    std::string name, match_name;
    int64_t call = 0;
    OpKind kind = OpKind::kNeighborAllreduce;
    std::vector<std::string> step_keys;
    bool reported = false;
  };
  using CallId = std::pair<std::string, int64_t>;  // (match name, call)

  const int rank_;
  std::unordered_map<std::string, std::shared_ptr<Active>> by_step_;  // by step key
  std::map<CallId, std::shared_ptr<Active>> by_call_;
  std::vector<DeviceConflict> conflicts_;
  std::map<CallId, Status> owed_;
};

}  // namespace flock
