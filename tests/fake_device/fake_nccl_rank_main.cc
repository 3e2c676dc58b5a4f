// One rank of the fake NCCL's cross-process test: fake_nccl_process_test.cc
// starts it once per rank, as an MPI launcher would. Usage:
//   flock_fake_nccl_rank <ncclUniqueId as 256 hex digits> <rank> <nranks>
// Exits 0 when every check passed, else 1 with the reason on stderr.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

bool ParseId(const char* hex, ncclUniqueId* id) {
  if (std::strlen(hex) != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    unsigned byte = 0;
    if (std::sscanf(hex + 2 * i, "%2x", &byte) != 1) return false;
    id->internal[i] = static_cast<char>(byte);
  }
  return true;
}

template <class T>
T* ToDevice(const std::vector<T>& host, cudaStream_t stream) {
  void* p = nullptr;
  if (cudaMalloc(&p, host.size() * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpyAsync(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream);
  return static_cast<T*>(p);
}

template <class T>
std::vector<T> ToHost(const T* device, size_t n, cudaStream_t stream) {
  std::vector<T> host(n);
  cudaMemcpyAsync(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream);
  return host;  // a copy into pageable memory returns when done
}

class Rank {
 public:
  Rank(int rank, int nranks) : rank_(rank), n_(nranks) {}

  int Run(const ncclUniqueId& id) {
    if (cudaSetDevice(rank_ % 4) != cudaSuccess) return Fail("cudaSetDevice");
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      return Fail("cudaStreamCreateWithFlags");
    if (ncclCommInitRank(&comm_, n_, id, rank_) != ncclSuccess) return Fail("ncclCommInitRank");
    if (!AllReduce() || !Ring() || !DistinctProcesses()) return 1;
    if (ncclCommFinalize(comm_) != ncclSuccess) return Fail("ncclCommFinalize");
    if (ncclCommDestroy(comm_) != ncclSuccess) return Fail("ncclCommDestroy");
    cudaStreamDestroy(stream_);
    return 0;
  }

 private:
  int Fail(const char* what) {
    std::fprintf(stderr, "fake NCCL rank %d of %d (pid %d): %s failed: %s\n", rank_, n_,
                 static_cast<int>(getpid()), what, ncclGetLastError(comm_));
    return 1;
  }

  // Polls the stream and the comm's async error (never a blind wait): a
  // failed comm is aborted, which releases its stream.
  bool Finished() {
    while (cudaStreamQuery(stream_) == cudaErrorNotReady) {
      ncclResult_t error = ncclSuccess;
      ncclCommGetAsyncError(comm_, &error);
      if (error != ncclSuccess) {
        Fail("an op");
        ncclCommAbort(comm_);
        comm_ = nullptr;
        return false;
      }
      usleep(1000);
    }
    return true;
  }

  bool AllReduce() {
    std::vector<float> mine(1000);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>((rank_ + 1) * i);
    float* data = ToDevice(mine, stream_);
    if (ncclAllReduce(data, data, 1000, ncclFloat32, ncclSum, comm_, stream_) != ncclSuccess)
      return !Fail("ncclAllReduce");
    if (!Finished()) return false;
    const std::vector<float> got = ToHost(data, 1000, stream_);
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != static_cast<float>(i * n_ * (n_ + 1) / 2)) return !Fail("the allreduce's sum");
    }
    return cudaFree(data) == cudaSuccess;
  }

  // 300 KB around the ring in one group (more than a socket buffer holds);
  // odd ranks call recv first.
  bool Ring() {
    const size_t n = 75000;
    int32_t* send = ToDevice(std::vector<int32_t>(n, rank_), stream_);
    int32_t* recv = ToDevice(std::vector<int32_t>(n, -1), stream_);
    const int next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
    ncclGroupStart();
    if (rank_ % 2 == 1) ncclRecv(recv, n, ncclInt32, prev, comm_, stream_);
    ncclSend(send, n, ncclInt32, next, comm_, stream_);
    if (rank_ % 2 == 0) ncclRecv(recv, n, ncclInt32, prev, comm_, stream_);
    if (ncclGroupEnd() != ncclSuccess) return !Fail("the ring's group");
    if (!Finished()) return false;
    if (ToHost(recv, n, stream_) != std::vector<int32_t>(n, prev)) return !Fail("the ring's data");
    return cudaFree(send) == cudaSuccess && cudaFree(recv) == cudaSuccess;
  }

  // Every rank's pid, gathered: proof that the ranks are separate processes.
  bool DistinctProcesses() {
    int32_t* pids = ToDevice(std::vector<int32_t>(n_, 0), stream_);
    int32_t* mine = ToDevice(std::vector<int32_t>(1, static_cast<int32_t>(getpid())), stream_);
    if (ncclAllGather(mine, pids, 1, ncclInt32, comm_, stream_) != ncclSuccess)
      return !Fail("ncclAllGather");
    if (!Finished()) return false;
    const std::vector<int32_t> got = ToHost(pids, n_, stream_);
    if (std::set<int32_t>(got.begin(), got.end()).size() != static_cast<size_t>(n_) ||
        got[rank_] != getpid())
      return !Fail("the gathered pids");
    return cudaFree(pids) == cudaSuccess && cudaFree(mine) == cudaSuccess;
  }

  const int rank_, n_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  ncclUniqueId id;
  if (argc != 4 || !ParseId(argv[1], &id)) {
    std::fprintf(stderr, "usage: %s <id as 256 hex digits> <rank> <nranks>\n", argv[0]);
    return 2;
  }
  return Rank(std::atoi(argv[2]), std::atoi(argv[3])).Run(id);
}
