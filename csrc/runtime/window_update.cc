// win_update on the calling thread: out = self_weight·x + Σ w_j·slot_j, with
// the slots as they were when read (later arrivals wait for the next update).
#include <algorithm>
#include <cstring>

#include "flock/common/reduce_kernels.h"
#include "flock/common/weighted_kernels.h"
#include "flock/runtime/windows.h"
#include "flock/topology/graph.h"

namespace flock {
namespace {

// Unset weights: the topology's (weighted) or 1/(in-degree+1) for self and each slot.
Result<std::pair<double, WeightList>> ResolveWeights(Runtime& runtime, const Window& window,
                                                     const WinUpdateOptions& options) {
  const std::string what = "win_update on window '" + window.name() + "'";
  if (options.self_weight.has_value() != options.neighbor_weights.has_value())
    return Status::InvalidArgument(what +
                                   ": give self_weight and neighbor_weights together, or neither");
  if (options.self_weight) {
    for (const auto& [peer, w] : *options.neighbor_weights) {
      if (!window.is_in_neighbor(peer))
        return Status::InvalidArgument(what + ": rank " + std::to_string(peer) +
                                       " is not an in-neighbour of rank " +
                                       std::to_string(window.rank()));
    }
    return std::make_pair(*options.self_weight, *options.neighbor_weights);
  }
  WeightList weights;
  std::shared_ptr<const topology::Graph> graph = runtime.topology();
  if (graph != nullptr && graph->is_weighted()) {
    for (int j : window.in_neighbors()) weights.emplace_back(j, graph->weight(j, window.rank()));
    return std::make_pair(graph->self_weight(window.rank()), weights);
  }
  const double uniform = 1.0 / static_cast<double>(window.in_neighbors().size() + 1);
  for (int j : window.in_neighbors()) weights.emplace_back(j, uniform);
  return std::make_pair(uniform, weights);
}

// acc = self_weight·self (+ w_0·slot_0) in one pass. The kernels take restrict
// pointers, so an update in place (acc is the own value) scales it or blends into it.
Status Start(void* acc, const void* self, double self_weight, const WeightList& weights,
             const Window::Snapshot& snapshot, DataType dtype, int64_t n) {
  const bool in_place = acc == self;
  if (weights.empty()) {
    return in_place ? ScaleInPlace(acc, n, dtype, self_weight)
                    : WeightedStore(acc, self, dtype, self_weight, n);
  }
  const void* first = snapshot.data[0]->data();
  if (in_place) return WeightedBlend(acc, self_weight, first, weights[0].second, dtype, n);
  return WeightedPair(acc, self, self_weight, first, weights[0].second, dtype, n);
}

// out = self_weight·self + Σ w_j·data_j, in float32 for half types.
Status Combine(const Window& window, double self_weight, const WeightList& weights,
               const Window::Snapshot& snapshot, const TensorView& out, BufferPool& pool) {
  const DataType dtype = window.dtype();
  const int64_t n = window.count();
  if (n == 0) return Status::OK();
  const bool direct = AccumulatorType(dtype) == dtype;
  PooledBuffer scratch;
  void* acc = out.data;
  if (!direct) {
    scratch = pool.Acquire(static_cast<size_t>(n) * DataTypeSize(AccumulatorType(dtype)));
    acc = scratch.data();
  }
  FLOCK_RETURN_IF_ERROR(Start(acc, window.self().data, self_weight, weights, snapshot, dtype, n));
  for (size_t i = 1; i < weights.size(); ++i)
    FLOCK_RETURN_IF_ERROR(
        WeightedAccumulate(acc, snapshot.data[i]->data(), dtype, weights[i].second, n));
  if (!direct) FLOCK_RETURN_IF_ERROR(StoreAccumulator(out.data, acc, dtype, n));
  return Status::OK();
}

}  // namespace

Status WinUpdate(Runtime& runtime, const std::string& name, const WinUpdateOptions& options,
                 const TensorView& out) {
  std::shared_ptr<Window> window = runtime.engine().windows().Find(name);
  if (window == nullptr)
    return Status::InvalidArgument("win_update: there is no window '" + name + "'");
  if (out.dtype != window->dtype() || out.num_elements() != window->count())
    return Status::InvalidArgument("win_update: the output does not match window '" + name + "'");
  FLOCK_ASSIGN_OR_RETURN(auto resolved, ResolveWeights(runtime, *window, options));
  const auto& [self_weight, weights] = resolved;
  std::vector<int> slots;
  for (const auto& [peer, w] : weights) slots.push_back(peer);
  if (options.require_mutex && !window->locks().LockLocal(slots))
    return Status::Aborted("win_update: window '" + name + "' was freed while waiting");
  const Window::Snapshot snapshot = window->Read(slots, options.reset);
  Status combined =
      Combine(*window, self_weight, weights, snapshot, out, runtime.engine().scratch_pool());
  if (runtime.win_ops_with_p()) {
    double p = self_weight * window->p_self();
    for (size_t i = 0; i < weights.size(); ++i) p += weights[i].second * snapshot.p[i];
    window->set_p_self(p);
  }
  if (options.require_mutex) window->locks().UnlockLocal(slots);
  return combined;
}

}  // namespace flock
