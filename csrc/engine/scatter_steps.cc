// Reducescatter and alltoall, as the executor runs them.
//
// A reducescatter batch is packed rank-major into the fusion buffer: block k
// holds, for every tensor of the batch, the rows rank k gets, each tensor's
// part padded to its largest split, so every block has one size and one
// transport call (MPI_Reduce_scatter_block, ncclReduceScatter) reduces them
// all. Padding rows are copies of a real row: they are reduced and dropped.
// An alltoall first all-gathers every rank's splits (so each rank knows what
// it receives and its output's dim 0), then makes one Alltoallv.
#include <cstring>

#include "flock/collectives/scatter_layout.h"
#include "flock/engine/executor_steps.h"

namespace flock {
namespace {

// One tensor of a reducescatter batch: its split and its place in a block.
struct ScatterPart {
  PendingRequest* request;
  int64_t row_bytes;
  RowSplit split;
  int64_t offset;  // bytes from the start of a block
};

// Block k of the send region: rank k's rows of every part, padded.
Status PackBlocks(DataPath& path, const std::vector<ScatterPart>& parts, int size,
                  int64_t block_bytes, char* buffer) {
  for (int k = 0; k < size; ++k) {
    for (const ScatterPart& p : parts) {
      const auto* in = static_cast<const char*>(p.request->op.tensor.data);
      char* dst = buffer + k * block_bytes + p.offset;
      const int64_t rows = p.split.rows[static_cast<size_t>(k)];
      FLOCK_RETURN_IF_ERROR(path.Copy(
          dst, in + p.split.first_row[static_cast<size_t>(k)] * p.row_bytes, rows * p.row_bytes));
      for (int64_t pad = rows; pad < p.split.most_rows; ++pad) {
        FLOCK_RETURN_IF_ERROR(path.Copy(dst + pad * p.row_bytes, in, p.row_bytes));
      }
    }
  }
  return Status::OK();
}

// The fusion buffer, agreed on a device (`host` not null: AgreeEveryRankHas).
// (A batch within the fusion threshold fits the buffer reserved at start.)
Result<void*> AgreedFusionBuffer(DataPath& path, Transport* host, const PendingRequest& r,
                                 int64_t bytes) {
  Result<void*> buffer = path.FusionBuffer(bytes);
  if (host == nullptr) return buffer;
  FLOCK_RETURN_IF_ERROR(AgreeEveryRankHas(
      *host, r, buffer.status(), "a device fusion buffer of " + std::to_string(bytes) + " bytes"));
  return buffer;
}

}  // namespace

Status Reducescatter(DataPath& path, Transport* host, Timeline& timeline,
                     const std::vector<PendingRequest*>& batch) {
  Transport& t = path.transport();
  const PendingRequest& first = *batch.front();
  const int size = t.size(first.op.group);
  const int me = t.rank(first.op.group);
  const DataType dtype = first.op.tensor.dtype;
  const auto elem = static_cast<int64_t>(DataTypeSize(dtype));
  std::vector<ScatterPart> parts;
  int64_t block_bytes = 0;
  for (PendingRequest* r : batch) {
    ScatterPart p{r, RowBytes(r->op.tensor.dtype, r->op.tensor.shape),
                  EvenRowSplit(r->op.tensor.shape[0], size), block_bytes};
    block_bytes += p.split.most_rows * p.row_bytes;
    parts.push_back(std::move(p));
  }
  if (block_bytes == 0) return Status::OK();  // every rank has only empty tensors
  const int64_t count = block_bytes / elem;
  const bool even = batch.size() == 1 && first.op.tensor.shape[0] % size == 0;
  if (even) {  // straight from the input into the output
    return Phase(timeline, batch, "COMMUNICATE", [&] {
      FLOCK_RETURN_IF_ERROR(t.ReduceScatter(first.op.tensor.data, first.output.data, count, dtype,
                                            first.op.reduce_op, first.op.group));
      return ScaleIfAverage(path, first, first.output.data, count);
    });
  }
  FLOCK_ASSIGN_OR_RETURN(void* raw,
                         AgreedFusionBuffer(path, host, first, (size + 1) * block_bytes));
  char* buffer = static_cast<char*>(raw);
  char* mine = buffer + size * block_bytes;
  FLOCK_RETURN_IF_ERROR(Phase(timeline, batch, "MEMCPY_IN_FUSION_BUFFER",
                              [&] { return PackBlocks(path, parts, size, block_bytes, buffer); }));
  FLOCK_RETURN_IF_ERROR(Phase(timeline, batch, "COMMUNICATE", [&] {
    FLOCK_RETURN_IF_ERROR(
        t.ReduceScatter(buffer, mine, count, dtype, first.op.reduce_op, first.op.group));
    return ScaleIfAverage(path, first, mine, count);
  }));
  return Phase(timeline, batch, "MEMCPY_OUT_FUSION_BUFFER", [&] {
    for (const ScatterPart& p : parts) {
      FLOCK_RETURN_IF_ERROR(path.Copy(p.request->output.data, mine + p.offset,
                                      p.split.rows[static_cast<size_t>(me)] * p.row_bytes));
    }
    return Status::OK();
  });
}

Result<std::shared_ptr<GatheredTensor>> Alltoall(DataPath& path, Transport& host, GpuBackend* gpu,
                                                 Timeline& timeline, PendingRequest& r) {
  const TensorView& in = r.op.tensor;
  const CommGroup group = r.op.group;
  const int size = host.size(group);
  const int me = host.rank(group);
  if (r.op.splits.size() != static_cast<size_t>(size) || in.shape.empty()) {
    return Status::Internal("alltoall '" + r.op.name + "' reached the executor without splits");
  }
  // Row k: what rank k sends to each rank.
  std::vector<int64_t> all(static_cast<size_t>(size) * static_cast<size_t>(size));
  FLOCK_RETURN_IF_ERROR(Phase(timeline, {&r}, "EXCHANGE_SPLITS", [&] {
    return host.Allgather(r.op.splits.data(), size * static_cast<int64_t>(sizeof(int64_t)),
                          all.data(), group);
  }));
  Transport& t = path.transport();
  FLOCK_ASSIGN_OR_RETURN(AlltoallLayout layout,
                         PlanAlltoall(in.dtype, in.shape, all, size, me, t.max_alltoall_bytes()));
  auto out = std::make_shared<GatheredTensor>();
  out->dtype = in.dtype;
  out->shape = layout.output_shape;
  out->received_splits = std::move(layout.recv_rows);
  FLOCK_RETURN_IF_ERROR(AllocateOutput(gpu, host, r, *out, layout.total_recv_bytes));
  FLOCK_RETURN_IF_ERROR(Phase(timeline, {&r}, "COMMUNICATE", [&] {
    return t.Alltoallv(in.data, layout.send_bytes, out->data(), layout.recv_bytes, group);
  }));
  return out;
}

}  // namespace flock
