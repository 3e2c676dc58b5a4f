// Window ops for Python and C++ programs (how they run: window/, docs/windows.md).
//
// win_create and win_free are collective: every rank calls them, in the same
// order; each rank checks what every rank brought (one small allgather), so a
// window that exists already, or neighbours whose tensors differ, fail on every
// rank with the same message. The one-sided ops are checked here (the window
// exists, the peers are its neighbours, the tensor matches) and returned as
// requests for Engine::Submit; win_update runs on the calling thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/requests/op_signature.h"
#include "flock/runtime/runtime.h"

namespace flock {

using WeightList = std::vector<std::pair<int, double>>;

// `tensor` (floating, contiguous, on the host) stays the window's own value
// until win_free; `keep_alive` keeps it valid that long.
Status WinCreate(Runtime& runtime, const std::string& name, const TensorView& tensor,
                 std::shared_ptr<void> keep_alive, bool zero_init);
// `name` unset: every window of this rank (each rank must hold the same ones).
Status WinFree(Runtime& runtime, const std::optional<std::string>& name);

// kWinPut / kWinAccumulate of `tensor` into the window's slots at `dst`
// (unset: every out-neighbour, weight 1); the tensor is scaled by
// `self_weight` (unset: 1) once sent.
Result<OpRequest> MakeWinPut(Runtime& runtime, OpKind kind, const TensorView& tensor,
                             const std::string& name, std::optional<double> self_weight,
                             const std::optional<WeightList>& dst, bool require_mutex);
// kWinGet of the window's value at `src` (unset: every in-neighbour, weight 1).
Result<OpRequest> MakeWinGet(Runtime& runtime, const std::string& name,
                             const std::optional<WeightList>& src, bool require_mutex);
// kWinLock / kWinUnlock of the slots for this rank at `ranks` (unset: out-neighbours).
Result<OpRequest> MakeWinMutex(Runtime& runtime, const std::string& name,
                               const std::optional<std::vector<int>>& ranks, bool release);
// win_mutex(for_self=True): this rank's own slots for `ranks`, held by the calling thread.
Status WinLockOwnSlots(Runtime& runtime, const std::string& name,
                       const std::optional<std::vector<int>>& ranks, bool release);

struct WinUpdateOptions {
  std::optional<double> self_weight;           // both set, or both unset: the
  std::optional<WeightList> neighbor_weights;  // topology's weights or 1/(in-degree+1)
  bool reset = false;
  bool require_mutex = false;
};
// out = self_weight·(own value) + Σ w_j·(slot j); `out` is the window's
// tensor itself, or a clone of its shape and dtype. With push-sum, p likewise.
Status WinUpdate(Runtime& runtime, const std::string& name, const WinUpdateOptions& options,
                 const TensorView& out);

Result<std::map<int, int64_t>> WinVersions(Runtime& runtime, const std::string& name);
Result<double> WinAssociatedP(Runtime& runtime, const std::string& name);
std::vector<std::string> WinNames(Runtime& runtime);

}  // namespace flock
