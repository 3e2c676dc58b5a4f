// Rank 0's answers, the same sequence on every rank: execute a batch, fail
// what it names, shut down; and the data movement every rank performs
// identically for an execute answer.
//
// Vocabulary: a *batch* is the list of local requests named by one execute
// response. A batch of one allreduce runs straight from input to output; a
// batch of several is packed into the fusion buffer (MEMCPY_IN_FUSION_BUFFER),
// reduced in one call (COMMUNICATE) and unpacked (MEMCPY_OUT_FUSION_BUFFER).
#include "flock/collectives/collectives.h"
#include "flock/common/logging.h"
#include "flock/engine/engine.h"
#include "flock/engine/executor_steps.h"

namespace flock {

Status ScaleIfAverage(DataPath& path, const PendingRequest& r, void* data, int64_t count) {
  if (r.op.reduce_op != ReduceOp::kAverage) return Status::OK();
  return path.Scale(data, count, r.op.tensor.dtype, 1.0 / path.transport().size(r.op.group));
}

Status AgreeEveryRankHas(Transport& host, const PendingRequest& r, const Status& mine,
                         const std::string& what) {
  int32_t everyone = mine.ok() ? 1 : 0;
  FLOCK_RETURN_IF_ERROR(
      host.Allreduce(&everyone, &everyone, 1, DataType::kInt32, ReduceOp::kMin, r.op.group));
  FLOCK_RETURN_IF_ERROR(mine);
  if (everyone != 1) {
    return Status::Aborted(std::string(OpKindName(r.op.kind)) + " '" + r.op.name +
                           "': another rank could not allocate " + what);
  }
  return Status::OK();
}

Status AllocateOutput(GpuBackend* gpu, Transport& host, const PendingRequest& r,
                      GatheredTensor& out, int64_t bytes) {
  if (gpu == nullptr) {
    out.bytes.resize(static_cast<size_t>(bytes));
    return Status::OK();
  }
  Result<std::shared_ptr<void>> made = gpu->AllocateOutput(bytes);
  FLOCK_RETURN_IF_ERROR(AgreeEveryRankHas(host, r, made.status(), "its device output"));
  out.device_data = std::move(made).value();
  out.device = r.op.tensor.device;
  return Status::OK();
}

namespace {

Status AllreduceOne(DataPath& path, Timeline& timeline, PendingRequest& r) {
  const int64_t count = r.op.tensor.num_elements();
  return Phase(timeline, {&r}, "COMMUNICATE", [&] {
    FLOCK_RETURN_IF_ERROR(path.transport().Allreduce(
        r.op.tensor.data, r.output.data, count, r.op.tensor.dtype, r.op.reduce_op, r.op.group));
    return ScaleIfAverage(path, r, r.output.data, count);
  });
}

Status AllreduceFused(DataPath& path, Timeline& timeline,
                      const std::vector<PendingRequest*>& batch) {
  int64_t total = 0;
  for (PendingRequest* r : batch) total += r->op.tensor.size_bytes();
  FLOCK_ASSIGN_OR_RETURN(void* buffer_raw, path.FusionBuffer(total));
  char* buffer = static_cast<char*>(buffer_raw);
  FLOCK_RETURN_IF_ERROR(Phase(timeline, batch, "MEMCPY_IN_FUSION_BUFFER", [&] {
    int64_t offset = 0;
    for (PendingRequest* r : batch) {
      FLOCK_RETURN_IF_ERROR(
          path.Copy(buffer + offset, r->op.tensor.data, r->op.tensor.size_bytes()));
      offset += r->op.tensor.size_bytes();
    }
    return Status::OK();
  }));
  const PendingRequest& first = *batch.front();
  const DataType dtype = first.op.tensor.dtype;
  const int64_t count = total / static_cast<int64_t>(DataTypeSize(dtype));
  FLOCK_RETURN_IF_ERROR(Phase(timeline, batch, "COMMUNICATE", [&] {
    FLOCK_RETURN_IF_ERROR(path.transport().Allreduce(buffer, buffer, count, dtype,
                                                     first.op.reduce_op, first.op.group));
    return ScaleIfAverage(path, first, buffer, count);
  }));
  return Phase(timeline, batch, "MEMCPY_OUT_FUSION_BUFFER", [&] {
    int64_t offset = 0;
    for (PendingRequest* r : batch) {
      FLOCK_RETURN_IF_ERROR(path.Copy(r->output.data, buffer + offset, r->op.tensor.size_bytes()));
      offset += r->op.tensor.size_bytes();
    }
    return Status::OK();
  });
}

// `gpu`: the backend that allocates a CUDA tensor's output (null for host tensors).
Result<std::shared_ptr<GatheredTensor>> Allgather(Transport& t, Transport& host, GpuBackend* gpu,
                                                  Timeline& timeline, PendingRequest& r,
                                                  const std::vector<int64_t>& first_dims) {
  TensorView in = r.op.tensor;
  if (in.shape.empty()) in.shape = {1};  // a 0-d tensor gathers as one row
  const int size = t.size(r.op.group);
  if (first_dims.size() != static_cast<size_t>(size)) {
    return Status::Internal("allgather '" + r.op.name + "': the coordinator sent " +
                            std::to_string(first_dims.size()) + " first dims for " +
                            std::to_string(size) + " ranks");
  }
  FLOCK_ASSIGN_OR_RETURN(const GatherLayout layout, PlanGather(in.dtype, in.shape, first_dims));
  auto out = std::make_shared<GatheredTensor>();
  out->dtype = in.dtype;
  out->shape = layout.output_shape;
  FLOCK_RETURN_IF_ERROR(AllocateOutput(gpu, host, r, *out, layout.total_bytes));
  FLOCK_RETURN_IF_ERROR(Phase(timeline, {&r}, "COMMUNICATE", [&] {
    return t.Allgatherv(in.data, layout.recv_bytes, out->data(), r.op.group);
  }));
  return out;
}

}  // namespace

void Engine::Execute(const Response& response) {
  std::vector<PendingRequest*> batch;
  for (const std::string& name : response.names) {
    PendingRequest* request = negotiator_.Find(name);
    if (request == nullptr) {  // the others would wait in the collective for this rank
      EndJob(Status::Internal("rank 0 scheduled '" + name + "', which rank " +
                              std::to_string(rank_) +
                              " has not submitted (or gave up on); "
                              "ending the job"));
      return;
    }
    timeline_.End(name);  // NEGOTIATING
    batch.push_back(request);
  }
  ++counters_.batches;
  if (batch.size() > 1) {
    ++counters_.fused_batches;
    counters_.fused_tensors += static_cast<int64_t>(batch.size());
  }
  for (PendingRequest* r : batch) counters_.bytes += r->op.tensor.size_bytes();

  std::shared_ptr<GatheredTensor> gathered;
  GpuEventPtr done;
  const Status status = batch.front()->op.tensor.device.type == DeviceType::kCUDA
                            ? RunGpuBatch(response, batch, &gathered, &done)
                            : RunBatch(host_path_, response, batch, &gathered);
  for (size_t i = 0; i < batch.size() && i < response.cache_ids.size(); ++i) {
    (void)negotiator_.cache().Store(response.cache_ids[i], batch[i]->op.name,
                                    MakeSignature(batch[i]->op));
  }
  counters_.cached_names = static_cast<int64_t>(negotiator_.cache().size());
  if (gathered != nullptr) {  // allgather, alltoall: never fused
    finisher_.Finish(*batch.front(), status, std::move(gathered), std::move(done));
  } else {
    finisher_.FinishBatch(batch, status, std::move(done));
  }
  for (PendingRequest* r : batch) {
    const std::string name = r->op.name;
    negotiator_.Erase(name);  // invalidates r
  }
}

Status Engine::RunBatch(DataPath& path, const Response& response,
                        const std::vector<PendingRequest*>& batch,
                        std::shared_ptr<GatheredTensor>* gathered) {
  PendingRequest& first = *batch.front();
  switch (response.kind) {
    case OpKind::kAllreduce:
      return batch.size() == 1 ? AllreduceOne(path, timeline_, first)
                               : AllreduceFused(path, timeline_, batch);
    case OpKind::kBroadcast:
      return Phase(timeline_, batch, "COMMUNICATE", [&] {
        return path.transport().Broadcast(first.op.tensor.data, first.op.tensor.size_bytes(),
                                          first.op.root, first.op.group);
      });
    case OpKind::kAllgather: {
      GpuBackend* gpu = first.op.tensor.device.type == DeviceType::kCUDA
                            ? gpu_.load(std::memory_order_acquire)
                            : nullptr;
      auto result =
          Allgather(path.transport(), transport_, gpu, timeline_, first, response.first_dims);
      if (!result.ok()) return result.status();
      *gathered = std::move(result).value();
      return Status::OK();
    }
    case OpKind::kReducescatter:
      return Reducescatter(path, &path == &host_path_ ? nullptr : &transport_, timeline_, batch);
    case OpKind::kAlltoall: {
      GpuBackend* gpu = first.op.tensor.device.type == DeviceType::kCUDA
                            ? gpu_.load(std::memory_order_acquire)
                            : nullptr;
      auto result = Alltoall(path, transport_, gpu, timeline_, first);
      if (!result.ok()) return result.status();
      *gathered = std::move(result).value();
      return Status::OK();
    }
    case OpKind::kBarrier:
      // Nothing left to do: the coordinator answers only once every rank has
      // announced the barrier, so no rank gets here before all have entered it.
      return Status::OK();
    case OpKind::kNeighborAllreduce:
    case OpKind::kNeighborAllgather:
    case OpKind::kHierarchicalNeighborAllreduce:
    case OpKind::kWinPut:
    case OpKind::kWinAccumulate:
    case OpKind::kWinGet:
    case OpKind::kWinLock:
    case OpKind::kWinUnlock:
      break;  // never negotiated: NeighborExchange and WindowService run them (engine.cc)
  }
  return Status::Internal("a neighbor op reached the global executor");
}

void Engine::Handle(const std::vector<Response>& responses) {
  for (const Response& response : responses) {
    switch (response.type) {
      case ResponseType::kExecute: Execute(response); break;
      case ResponseType::kError:
        negotiator_.TakeFailed(response, [&](PendingRequest& request, Status status) {
          finisher_.Finish(request, std::move(status), nullptr);
        });
        break;
      case ResponseType::kShuttingDown:
        shutting_down_reason_ = response.error;
        FailAllPending(response.error);
        break;
      case ResponseType::kFinal:
        requests_.StopAccepting("flock has been shut down");
        finished_ = true;
        break;
      case ResponseType::kWithdrawn: WithdrawCall(response); break;
    }
  }
}

}  // namespace flock
