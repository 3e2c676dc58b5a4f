// The GPU benchmark's set-up and checks: errors, the ring's neighbours and
// weights, device buffers, the raw side's NCCL communicator, and the
// comparison of one call's output with the values it must hold.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "flock/common/weighted_kernels.h"
#include "gpu/gpu_bench.h"
#include "raw_mpi_protocol.h"

namespace gpu_bench {

void Die(const std::string& what) {
  int rank = -1, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "gpu_bench [rank %d]: %s\n", rank, what.c_str());
  std::fflush(stderr);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

void CheckCuda(cudaError_t error, const char* call) {
  if (error != cudaSuccess) Die(std::string(call) + " failed: " + cudaGetErrorString(error));
}

void CheckNccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) Die(std::string(call) + " failed: " + ncclGetErrorString(result));
}

void CheckOk(const flock::Status& status, const std::string& what) {
  if (!status.ok()) Die(what + ": " + status.ToString());
}

const char* OpName(Op op) {
  return op == Op::kAllreduce ? "allreduce" : "neighbor_allreduce";
}

GpuBench::GpuBench(flock::Runtime& runtime, int64_t max_bytes)
    : runtime_(runtime),
      rank_(runtime.rank()),
      size_(runtime.size()),
      max_count_(max_bytes / static_cast<int64_t>(sizeof(float))) {
  auto gpu = runtime.Gpu();
  CheckOk(gpu.status(), "starting flock's GPU backend");
  gpu_ = gpu.value();
  device_ = gpu_->device();
  // The raw side adds into the output itself: float32 is its own accumulator type.
  if (flock::AccumulatorType(flock::DataType::kFloat32) != flock::DataType::kFloat32) {
    Die("float32's accumulator type is not float32: the raw neighbor side needs an accumulator");
  }
  for (int peer : {(rank_ + size_ - 1) % size_, (rank_ + 1) % size_}) {
    if (peer != rank_ && std::find(peers_.begin(), peers_.end(), peer) == peers_.end()) {
      peers_.push_back(peer);
    }
  }
  std::sort(peers_.begin(), peers_.end());
  weight_ = 1.0 / static_cast<double>(peers_.size() + 1);
  weights_.self_weight = weight_;
  weights_.src_weights.emplace();
  weights_.dst_weights.emplace();
  for (int peer : peers_) {
    weights_.src_weights->push_back({peer, weight_});
    weights_.dst_weights->push_back({peer, 1.0});  // sent unscaled
  }

  GPU_BENCH_CUDA(cudaSetDevice(device_));
  GPU_BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  const size_t bytes = static_cast<size_t>(max_count_) * sizeof(float);
  GPU_BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&input_), bytes));
  GPU_BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&output_), bytes));
  scratch_.assign(peers_.size(), nullptr);
  for (float*& buffer : scratch_) {
    GPU_BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&buffer), bytes));
  }
  FillInput();
  MakeCommunicator();
}

GpuBench::~GpuBench() {
  (void)cudaStreamSynchronize(stream_);
  if (comm_ != nullptr) {
    if (ncclCommFinalize(comm_) != ncclSuccess || ncclCommDestroy(comm_) != ncclSuccess) {
      (void)ncclCommAbort(comm_);
    }
  }
  for (float* buffer : scratch_) (void)cudaFree(buffer);
  (void)cudaFree(output_);
  (void)cudaFree(input_);
  (void)cudaStreamDestroy(stream_);
}

// The raw side's own communicator, made as flock's is: rank 0's id over MPI,
// then a barrier (ncclCommInitRank may return before its peers have).
void GpuBench::MakeCommunicator() {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank_ == 0) GPU_BENCH_NCCL(ncclGetUniqueId(&id));
  BENCH_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
  GPU_BENCH_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
  BENCH_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

// Rank r's element i: r + 1 + i % 7 (small integers: every sum is exact).
static float InputValue(int rank, int64_t i) {
  return static_cast<float>(rank + 1 + i % 7);
}

void GpuBench::FillInput() {
  std::vector<float> host(static_cast<size_t>(max_count_));
  for (int64_t i = 0; i < max_count_; ++i) host[static_cast<size_t>(i)] = InputValue(rank_, i);
  GPU_BENCH_CUDA(cudaMemcpyAsync(input_, host.data(), host.size() * sizeof(float),
                                 cudaMemcpyHostToDevice, stream_));
  GPU_BENCH_CUDA(cudaStreamSynchronize(stream_));
}

float GpuBench::Expected(Op op, int64_t i) const {
  double sum = InputValue(rank_, i);
  if (op == Op::kAllreduce) {
    sum = 0;
    for (int r = 0; r < size_; ++r) sum += InputValue(r, i);
    return static_cast<float>(sum);
  }
  for (int peer : peers_) sum += InputValue(peer, i);
  return static_cast<float>(weight_ * sum);
}

bool GpuBench::Check(Op op, bool flock, int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  GPU_BENCH_CUDA(cudaMemsetAsync(output_, 0, bytes, stream_));
  GPU_BENCH_CUDA(cudaStreamSynchronize(stream_));
  flock ? Flock(op, count) : Raw(op, count);
  std::vector<float> host(static_cast<size_t>(count));
  GPU_BENCH_CUDA(cudaMemcpyAsync(host.data(), output_, bytes, cudaMemcpyDeviceToHost, stream_));
  GPU_BENCH_CUDA(cudaStreamSynchronize(stream_));
  for (int64_t i = 0; i < count; ++i) {
    const float want = Expected(op, i), got = host[static_cast<size_t>(i)];
    if (std::fabs(got - want) > 1e-5f * std::max(1.0f, std::fabs(want))) {
      std::fprintf(stderr, "gpu_bench [rank %d]: %s %s of %lld bytes: element %lld is %g, not %g\n",
                   rank_, flock ? "flock" : "raw NCCL", OpName(op), static_cast<long long>(bytes),
                   static_cast<long long>(i), got, want);
      return false;
    }
  }
  return true;
}

}  // namespace gpu_bench
