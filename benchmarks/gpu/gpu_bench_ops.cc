// The four measured calls: raw NCCL and flock, for the allreduce and the
// ring's neighbor_allreduce. Each returns once its result is in the output
// (the raw side synchronises its stream, flock's side waits on the host for
// the op's done event), so the benchmark times whole calls.
#include <chrono>

#include "flock/runtime/neighbor_requests.h"
#include "flock/transport/cuda/device_kernels.h"
#include "gpu/gpu_bench.h"

namespace gpu_bench {

using flock::DataType;

void GpuBench::Raw(Op op, int64_t count) {
  op == Op::kAllreduce ? RawAllreduce(count) : RawNeighbor(count);
}

void GpuBench::Flock(Op op, int64_t count) {
  op == Op::kAllreduce ? FlockAllreduce(count) : FlockNeighbor(count);
}

flock::TensorView GpuBench::View(void* data, int64_t count) const {
  return flock::TensorView{
      data, DataType::kFloat32, {count}, flock::Device{flock::DeviceType::kCUDA, device_}};
}

void GpuBench::RawAllreduce(int64_t count) {
  GPU_BENCH_NCCL(ncclAllReduce(input_, output_, static_cast<size_t>(count), ncclFloat32, ncclSum,
                               comm_, stream_));
  GPU_BENCH_CUDA(cudaStreamSynchronize(stream_));
}

// Every neighbour's tensor into its scratch buffer (one NCCL group), then
// output = w * input + sum of w * scratch with flock's kernels.
void GpuBench::RawNeighbor(int64_t count) {
  const size_t n = static_cast<size_t>(count);
  if (!peers_.empty()) {
    GPU_BENCH_NCCL(ncclGroupStart());
    for (size_t k = 0; k < peers_.size(); ++k) {
      GPU_BENCH_NCCL(ncclRecv(scratch_[k], n, ncclFloat32, peers_[k], comm_, stream_));
    }
    for (int peer : peers_) GPU_BENCH_NCCL(ncclSend(input_, n, ncclFloat32, peer, comm_, stream_));
    GPU_BENCH_NCCL(ncclGroupEnd());
  }
  CheckOk(flock::gpu::WeightedStore(stream_, output_, input_, DataType::kFloat32, weight_, count),
          "the raw side's weighted store");
  for (float* received : scratch_) {
    CheckOk(flock::gpu::WeightedAccumulate(stream_, output_, received, DataType::kFloat32, weight_,
                                           count),
            "the raw side's weighted accumulate");
  }
  GPU_BENCH_CUDA(cudaStreamSynchronize(stream_));
}

void GpuBench::FlockAllreduce(int64_t count) {
  flock::OpRequest op =
      flock::MakeRequest(flock::OpKind::kAllreduce, "gpu_bench.allreduce." + std::to_string(count),
                         View(input_, count));
  op.reduce_op = flock::ReduceOp::kSum;
  SubmitAndWait(std::move(op), count);
}

// Prepared as the Python bindings prepare it: explicit weights (the job sets
// no topology), the topology check on (Python's default).
void GpuBench::FlockNeighbor(int64_t count) {
  flock::OpRequest op = flock::MakeRequest(flock::OpKind::kNeighborAllreduce,
                                           "gpu_bench.neighbor_allreduce." + std::to_string(count),
                                           View(input_, count));
  flock::PrepareNeighborAllreduce(runtime_, op, weights_, /*check=*/true);
  SubmitAndWait(std::move(op), count);
}

// The inputs are ready where the application stream is now; a blocking call
// (wait_follows: the waiting thread drives the engine), then the host waits
// for the GPU to reach the op's done event.
void GpuBench::SubmitAndWait(flock::OpRequest op, int64_t count) {
  auto ready = gpu_->RecordReady(reinterpret_cast<flock::StreamHandle>(stream_));
  CheckOk(ready.status(), "recording the ready event");
  op.ready = std::move(ready).value();
  const std::string name = op.name;
  flock::Engine& engine = runtime_.engine();
  auto handle = engine.Submit(std::move(op), View(output_, count), nullptr, /*wait_follows=*/true);
  CheckOk(handle.status(), "submitting " + name);
  auto done = engine.Wait(handle.value(), std::chrono::milliseconds(100), nullptr);
  CheckOk(done.status(), "waiting for " + name);
  CheckOk(done.value().status, name);
  if (done.value().done == nullptr) Die(name + " completed without a done event");
  CheckOk(gpu_->HostWait(*done.value().done), "waiting on the host for " + name + " on the GPU");
}

}  // namespace gpu_bench
