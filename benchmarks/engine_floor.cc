// Raw-MPI floor for the engine benchmark (bench_engine.py measures flock the
// same way). Three cases, each timed per iteration as MPI_Barrier, clock,
// work, clock; the iteration time is the max over ranks; rank 0 prints the
// median over the timed iterations as one JSON line per case:
//   many_small  100 float32 tensors of 4 KB, one blocking MPI_Allreduce each
//   one_large   one float32 tensor of 64 MB
//   latency     one 4-byte MPI_Allreduce
// Run: flockrun -np 2 build/benchmarks/engine_floor [--reps N]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "raw_mpi_protocol.h"

using bench::MedianOfMaxima;

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int reps = 30;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  std::vector<std::vector<float>> small(100, std::vector<float>(1024, 1.0f));
  const double many_small = MedianOfMaxima(
      [&] {
        for (auto& t : small)
          MPI_Allreduce(MPI_IN_PLACE, t.data(), 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      },
      3, reps);
  std::vector<float> large(16 << 20, 1.0f);
  const double one_large = MedianOfMaxima(
      [&] {
        MPI_Allreduce(MPI_IN_PLACE, large.data(), static_cast<int>(large.size()), MPI_FLOAT,
                      MPI_SUM, MPI_COMM_WORLD);
      },
      2, std::max(reps / 2, 20));
  float one = 1.0f;
  const double latency = MedianOfMaxima(
      [&] { MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }, 20,
      reps * 10);
  if (rank == 0) {
    std::printf(
        "{\"impl\": \"raw_mpi\", \"many_small_ms\": %.4f, \"one_large_ms\": %.4f, "
        "\"latency_ms\": %.4f}\n",
        many_small, one_large, latency);
  }
  MPI_Finalize();
  return 0;
}
