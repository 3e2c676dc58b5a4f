// The GPU benchmark's parts (benchmarks/gpu/gpu_bench.cc runs them): flock on
// CUDA tensors beside the raw NCCL calls that do the same work, in one MPI
// process per rank, on float32 tensors of 4 KiB to 256 MiB.
//
//   allreduce           raw: ncclAllReduce on the benchmark's own communicator
//                       and stream, then cudaStreamSynchronize.
//                       flock: an OpRequest of kind kAllreduce on a CUDA
//                       TensorView, ready at GpuBackend::RecordReady of that
//                       stream, Engine::Submit + Engine::Wait, then
//                       GpuBackend::HostWait on the completion's done event.
//   neighbor_allreduce  a ring: each rank averages itself and its distinct
//                       neighbours rank-1 and rank+1 with equal weights
//                       (1/3 each; 1/2 at np 2, where both are one rank).
//                       raw: grouped ncclSend/ncclRecv into scratch, flock's
//                       device kernels (transport/cuda/device_kernels.h) for
//                       the weighted sum, cudaStreamSynchronize.
//                       flock: PrepareNeighborAllreduce with explicit self,
//                       src and dst weights (as the Python bindings), then as
//                       for the allreduce.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flock/common/status.h"
#include "flock/common/tensor_view.h"
#include "flock/neighbor/neighbor_plan.h"
#include "flock/requests/op_signature.h"
#include "flock/runtime/runtime.h"

namespace gpu_bench {

// Ends the whole job (MPI_Abort) after printing `what` with this rank.
[[noreturn]] void Die(const std::string& what);
void CheckCuda(cudaError_t error, const char* call);
void CheckNccl(ncclResult_t result, const char* call);
void CheckOk(const flock::Status& status, const std::string& what);

#define GPU_BENCH_CUDA(call) ::gpu_bench::CheckCuda((call), #call)
#define GPU_BENCH_NCCL(call) ::gpu_bench::CheckNccl((call), #call)

enum class Op { kAllreduce, kNeighbor };
const char* OpName(Op op);

// Device buffers for the largest size, the raw side's NCCL communicator and
// stream (the "application stream" flock's ready events are recorded on too),
// and flock's runtime and GPU backend.
class GpuBench {
 public:
  GpuBench(flock::Runtime& runtime, int64_t max_bytes);
  ~GpuBench();
  GpuBench(const GpuBench&) = delete;
  GpuBench& operator=(const GpuBench&) = delete;

  int device() const { return device_; }
  bool flock_via_mpi() const { return gpu_->via_mpi(); }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::vector<int>& peers() const { return peers_; }

  // One call of `op` on the first `count` elements, done once it returns.
  void Raw(Op op, int64_t count);
  void Flock(Op op, int64_t count);
  // Clears the output, runs one call and compares the output with the
  // expected values on the host; false (after printing why) on a mismatch.
  bool Check(Op op, bool flock, int64_t count);

 private:
  void MakeCommunicator();
  void FillInput();
  void RawAllreduce(int64_t count);
  void RawNeighbor(int64_t count);
  void FlockAllreduce(int64_t count);
  void FlockNeighbor(int64_t count);
  void SubmitAndWait(flock::OpRequest op, int64_t count);
  flock::TensorView View(void* data, int64_t count) const;
  float Expected(Op op, int64_t i) const;

  flock::Runtime& runtime_;
  flock::GpuBackend* gpu_ = nullptr;
  const int rank_, size_;
  int device_ = 0;
  const int64_t max_count_;
  std::vector<int> peers_;  // the ring's distinct neighbours, ascending
  double weight_ = 1.0;     // of self and of each neighbour
  flock::NeighborWeights weights_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  float* input_ = nullptr;
  float* output_ = nullptr;
  std::vector<float*> scratch_;  // one receive buffer per neighbour (raw side)
};

// One line of the report: a size of one op.
struct Row {
  Op op;
  int64_t bytes = 0;
  int iters = 0;   // timed calls per round
  int warmup = 0;  // untimed calls before them
  double raw_us = 0;
  double flock_us = 0;
};

// Ratio target (flock/raw) from this size on, as on the CPU.
constexpr int64_t kTargetFromBytes = 1L << 20;
constexpr double kTargetRatio = 1.10;

struct RunInfo {
  int np = 1;
  std::string host;
  std::string device;  // "cuda:0 (NVIDIA A100-SXM4-80GB)", or the fake's
  bool fake = false;
  bool via_mpi = false;  // flock's device data over MPI (FLOCK_GPU_VIA_MPI=1), not NCCL
  int nccl_version = 0;
  int iters = 0;   // 0: the protocol's (50, 20 from 4 MiB)
  int warmup = 0;  // < 0: the protocol's (5, 3 from 4 MiB)
  int rounds = 1;
  int neighbours = 0;  // rank 0's on the ring
};

// Rank 0's output: the header, then a table per op.
void PrintReport(const RunInfo& info, const std::vector<Row>& rows);
// The same rows as JSON in `path`; false when it cannot be written.
bool WriteJson(const std::string& path, const RunInfo& info, const std::vector<Row>& rows);

}  // namespace gpu_bench
