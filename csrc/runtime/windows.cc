// win_create and win_free: collective, checked on every rank alike.
#include "flock/runtime/windows.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "flock/runtime/collectives.h"
#include "flock/topology/graph.h"

namespace flock {
namespace {

// What each rank brings to win_create / win_free (one row of the allgather).
enum Field { kNameHash, kRefusal, kDtype, kNdim, kNumel, kShapeHash, kFields };
enum Refusal : int64_t { kFine = 0, kExists = 1, kLocalError = 2, kMissing = 3 };

int64_t Hash(const std::string& text) {
  return static_cast<int64_t>(std::hash<std::string>()(text) & 0x7fffffffffffffffULL);
}

int64_t ShapeHash(const std::vector<int64_t>& shape) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the dims (unsigned: wraps by design)
  for (int64_t d : shape) h = (h ^ static_cast<uint64_t>(d)) * 1099511628211ULL;
  return static_cast<int64_t>(h & 0x7fffffffffffffffULL);
}

// Every rank's row, in rank order.
Result<std::vector<std::vector<int64_t>>> Exchange(Runtime& runtime, const std::string& op,
                                                   std::vector<int64_t> mine) {
  std::vector<int64_t> all;
  TensorView row{mine.data(), DataType::kInt64, {1, kFields}, Device{}};
  AllgatherOptions options;
  options.name = "flock." + op;
  FLOCK_RETURN_IF_ERROR(Allgather(
      runtime, row,
      [&](const std::vector<int64_t>& shape) -> Result<TensorView> {
        all.resize(static_cast<size_t>(shape[0] * kFields));
        return TensorView{all.data(), DataType::kInt64, shape, Device{}};
      },
      options));
  std::vector<std::vector<int64_t>> rows;
  for (size_t r = 0; r * kFields < all.size(); ++r)
    rows.emplace_back(all.begin() + r * kFields, all.begin() + (r + 1) * kFields);
  return rows;
}

std::string Ranks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

std::vector<int> WithoutSelf(std::vector<int> ranks, int self) {
  ranks.erase(std::remove(ranks.begin(), ranks.end(), self), ranks.end());
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// The same verdict on every rank, from every rank's row.
Status Verdict(const std::string& what, const std::vector<std::vector<int64_t>>& rows,
               const topology::Graph& graph, int rank, const Status& local) {
  std::vector<int> refused[4];
  for (size_t r = 0; r < rows.size(); ++r)
    refused[rows[r][kRefusal]].push_back(static_cast<int>(r));
  if (rows[rank][kRefusal] == kLocalError) return local;
  if (!refused[kLocalError].empty())
    return Status::Aborted(what + " failed: rank(s) " + Ranks(refused[kLocalError]) +
                           " refused their tensor (see the error raised there)");
  if (!refused[kExists].empty())
    return Status::InvalidArgument(what + ": the window exists already on rank(s) " +
                                   Ranks(refused[kExists]) +
                                   "; win_free it first or pick another name");
  if (!refused[kMissing].empty())
    return Status::InvalidArgument(what + ": rank(s) " + Ranks(refused[kMissing]) +
                                   " have no such window");
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r][kNameHash] != rows[0][kNameHash])
      return Status::Mismatch(what + ": ranks passed different names (rank 0 and rank " +
                              std::to_string(r) + " differ); every rank must name the same window");
  }
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    for (int j : WithoutSelf(graph.in_neighbors(r), r)) {
      const auto& a = rows[r];
      const auto& b = rows[j];
      if (a[kDtype] != b[kDtype] || a[kNumel] != b[kNumel] || a[kShapeHash] != b[kShapeHash]) {
        return Status::Mismatch(
            what + ": rank " + std::to_string(r) + " and its in-neighbour rank " +
            std::to_string(j) + " hold tensors of different " +
            (a[kDtype] != b[kDtype]
                 ? "dtypes (" + std::string(DataTypeName(static_cast<DataType>(a[kDtype]))) +
                       " and " + DataTypeName(static_cast<DataType>(b[kDtype])) + ")"
                 : std::string("shapes")) +
            "; a window's neighbours must match");
      }
    }
  }
  return Status::OK();
}

Status CheckTensor(const TensorView& tensor) {
  if (tensor.device.type != DeviceType::kCPU)
    return Status::Unsupported("windows hold CPU tensors; this one is on " +
                               DeviceToString(tensor.device));
  if (!IsFloatingPoint(tensor.dtype))
    return Status::Unsupported(std::string("windows hold floating tensors (weights scale them); "
                                           "this one is ") +
                               DataTypeName(tensor.dtype));
  return Status::OK();
}

}  // namespace

Status WinCreate(Runtime& runtime, const std::string& name, const TensorView& tensor,
                 std::shared_ptr<void> keep_alive, bool zero_init) {
  const int rank = runtime.rank();
  std::shared_ptr<const topology::Graph> graph = runtime.topology();
  WindowTable& table = runtime.engine().windows();
  Status local =
      graph == nullptr ? Status::InvalidArgument("no topology is set") : CheckTensor(tensor);
  std::vector<int64_t> row(kFields, 0);
  row[kNameHash] = Hash(name);
  row[kDtype] = static_cast<int64_t>(tensor.dtype);
  row[kNdim] = static_cast<int64_t>(tensor.shape.size());
  row[kNumel] = tensor.num_elements();
  row[kShapeHash] = ShapeHash(tensor.shape);
  std::shared_ptr<Window> window;
  if (!local.ok()) {
    row[kRefusal] = kLocalError;
  } else {
    WindowSpec spec{name,
                    rank,
                    tensor,
                    std::move(keep_alive),
                    WithoutSelf(graph->in_neighbors(rank), rank),
                    WithoutSelf(graph->out_neighbors(rank), rank),
                    zero_init};
    window = std::make_shared<Window>(std::move(spec), runtime.engine().scratch_pool(),
                                      runtime.engine().WindowNotifier());
    // Registered before the exchange: a neighbour may put as soon as its own call returns.
    if (!table.Add(window).ok()) row[kRefusal] = kExists;
  }
  const std::string what = "win_create '" + name + "'";
  FLOCK_ASSIGN_OR_RETURN(auto rows, Exchange(runtime, "win_create", row));
  Status verdict = Verdict(what, rows, *graph, rank, local);
  if (!verdict.ok() && row[kRefusal] == kFine) table.Remove(name);
  return verdict;
}

Status WinFree(Runtime& runtime, const std::optional<std::string>& name) {
  WindowTable& table = runtime.engine().windows();
  const std::vector<std::string> names = name ? std::vector<std::string>{*name} : table.Names();
  std::vector<int64_t> row(kFields, 0);
  std::string joined;
  for (const std::string& n : names) joined += n + '\n';
  row[kNameHash] = Hash(joined);
  for (const std::string& n : names)
    if (table.Find(n) == nullptr) row[kRefusal] = kMissing;
  const std::string what = name ? "win_free '" + *name + "'" : std::string("win_free()");
  FLOCK_ASSIGN_OR_RETURN(auto rows, Exchange(runtime, "win_free", row));
  // No neighbour checks: an empty graph.
  Status verdict = Verdict(what, rows, topology::Graph(static_cast<int>(rows.size())),
                           runtime.rank(), Status::OK());
  if (!verdict.ok()) return verdict;
  for (const std::string& n : names) {
    std::shared_ptr<Window> removed = table.Remove(n);
    if (removed != nullptr) removed->locks().ReleaseAll();
  }
  return Status::OK();
}

std::vector<std::string> WinNames(Runtime& runtime) {
  return runtime.engine().windows().Names();
}

}  // namespace flock
