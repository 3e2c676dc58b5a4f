// The one-sided window ops as requests, and win_update on the calling thread.
#include <algorithm>
#include <cstring>

#include "flock/common/weighted_kernels.h"
#include "flock/runtime/windows.h"
#include "flock/topology/graph.h"

namespace flock {
namespace {

Result<std::shared_ptr<Window>> Find(Runtime& runtime, const std::string& op,
                                     const std::string& name) {
  std::shared_ptr<Window> window = runtime.engine().windows().Find(name);
  if (window == nullptr)
    return Status::InvalidArgument(op + ": there is no window '" + name +
                                   "' (win_create it first; it may have been freed)");
  return window;
}

// Peers named by the caller must be neighbours of the window on that side.
Status CheckPeers(const std::string& op, const Window& window, const WeightList& peers,
                  bool outgoing) {
  for (const auto& [peer, weight] : peers) {
    const bool ok = outgoing ? window.is_out_neighbor(peer) : window.is_in_neighbor(peer);
    if (!ok) {
      return Status::InvalidArgument(
          op + " on window '" + window.name() + "': rank " + std::to_string(peer) + " is not an " +
          (outgoing ? "out" : "in") + "-neighbour of rank " + std::to_string(window.rank()) +
          " (the topology when the window was created)");
    }
  }
  return Status::OK();
}

WeightList AllWithWeightOne(const std::vector<int>& ranks) {
  WeightList peers;
  for (int r : ranks) peers.emplace_back(r, 1.0);
  return peers;
}

OpRequest WindowRequest(Runtime& runtime, OpKind kind, const std::string& name,
                        std::shared_ptr<WindowCall> call) {
  OpRequest op;
  op.kind = kind;
  // "win_put.<window>.<n>": unique (several may be in flight per window), and readable
  // as a timeline row.
  op.name = runtime.AutoName(std::string(OpKindName(kind)) + "." + name);
  op.auto_named = true;
  call->window = name;
  op.window = std::move(call);
  return op;
}

}  // namespace

Result<OpRequest> MakeWinPut(Runtime& runtime, OpKind kind, const TensorView& tensor,
                             const std::string& name, std::optional<double> self_weight,
                             const std::optional<WeightList>& dst, bool require_mutex) {
  const std::string op_name = OpKindName(kind);
  FLOCK_ASSIGN_OR_RETURN(std::shared_ptr<Window> window, Find(runtime, op_name, name));
  if (tensor.device.type != DeviceType::kCPU || tensor.dtype != window->dtype() ||
      tensor.num_elements() != window->count()) {
    return Status::InvalidArgument(
        op_name + " on window '" + name + "': the tensor (" + DataTypeName(tensor.dtype) + ", " +
        std::to_string(tensor.num_elements()) + " elements on " + DeviceToString(tensor.device) +
        ") does not match the window (" + DataTypeName(window->dtype()) + ", " +
        std::to_string(window->count()) + " elements on cpu)");
  }
  FLOCK_RETURN_IF_ERROR(window->TakeLateError());
  auto call = std::make_shared<WindowCall>();
  call->peers = dst ? *dst : AllWithWeightOne(window->out_neighbors());
  FLOCK_RETURN_IF_ERROR(CheckPeers(op_name, *window, call->peers, /*outgoing=*/true));
  call->self_weight = self_weight.value_or(1.0);
  call->require_mutex = require_mutex;
  call->with_p = runtime.win_ops_with_p();
  OpRequest op = WindowRequest(runtime, kind, name, std::move(call));
  op.tensor = tensor;
  return op;
}

Result<OpRequest> MakeWinGet(Runtime& runtime, const std::string& name,
                             const std::optional<WeightList>& src, bool require_mutex) {
  FLOCK_ASSIGN_OR_RETURN(std::shared_ptr<Window> window, Find(runtime, "win_get", name));
  auto call = std::make_shared<WindowCall>();
  call->peers = src ? *src : AllWithWeightOne(window->in_neighbors());
  FLOCK_RETURN_IF_ERROR(CheckPeers("win_get", *window, call->peers, /*outgoing=*/false));
  call->require_mutex = require_mutex;
  return WindowRequest(runtime, OpKind::kWinGet, name, std::move(call));
}

Result<OpRequest> MakeWinMutex(Runtime& runtime, const std::string& name,
                               const std::optional<std::vector<int>>& ranks, bool release) {
  FLOCK_ASSIGN_OR_RETURN(std::shared_ptr<Window> window, Find(runtime, "win_mutex", name));
  std::vector<int> peers = ranks ? *ranks : window->out_neighbors();
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  for (int peer : peers) {
    if (peer < 0 || peer >= runtime.size() || peer == runtime.rank())
      return Status::InvalidArgument("win_mutex on window '" + name + "': rank " +
                                     std::to_string(peer) + " is not another rank of the job");
  }
  auto call = std::make_shared<WindowCall>();
  call->peers = AllWithWeightOne(peers);
  return WindowRequest(runtime, release ? OpKind::kWinUnlock : OpKind::kWinLock, name,
                       std::move(call));
}

Status WinLockOwnSlots(Runtime& runtime, const std::string& name,
                       const std::optional<std::vector<int>>& ranks, bool release) {
  FLOCK_ASSIGN_OR_RETURN(std::shared_ptr<Window> window, Find(runtime, "win_mutex", name));
  const std::vector<int> slots = ranks ? *ranks : window->out_neighbors();
  if (release) {
    window->locks().UnlockLocal(slots);
    return Status::OK();
  }
  if (!window->locks().LockLocal(slots))
    return Status::Aborted("win_mutex: window '" + name + "' was freed while waiting");
  return Status::OK();
}

Result<std::map<int, int64_t>> WinVersions(Runtime& runtime, const std::string& name) {
  FLOCK_ASSIGN_OR_RETURN(std::shared_ptr<Window> window, Find(runtime, "get_win_version", name));
  return window->Versions();
}

Result<double> WinAssociatedP(Runtime& runtime, const std::string& name) {
  FLOCK_ASSIGN_OR_RETURN(std::shared_ptr<Window> window, Find(runtime, "win_associated_p", name));
  return window->p_self();
}

}  // namespace flock
