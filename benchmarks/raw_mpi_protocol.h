// What the raw-MPI floor programs share with each other and with flock's Python
// benchmarks (bench_allreduce.py): the sizes, warm-up and repetition counts of
// the measuring protocol, the timing loop, and one check macro for MPI calls.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#define BENCH_MPI_CHECK(call)                                              \
  do {                                                                     \
    int code_ = (call);                                                    \
    if (code_ != MPI_SUCCESS) {                                            \
      std::fprintf(stderr, "%s failed with MPI error %d\n", #call, code_); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                        \
    }                                                                      \
  } while (0)

namespace bench {

constexpr long kMinBytes = 4L << 10;
constexpr long kMaxBytes = 64L << 20;
constexpr long kLargeBytes = 4L << 20;  // from here on: fewer warm-ups and reps

inline int WarmupsFor(long bytes) {
  return bytes < kLargeBytes ? 5 : 3;
}
// `override` > 0 replaces the protocol's count.
inline int RepsFor(long bytes, int override) {
  if (override > 0) return override;
  return bytes < kLargeBytes ? 50 : 20;
}

// Runs `work` warmup times, then reps times as barrier, clock, work, clock;
// an iteration's time is the slowest rank's. Returns the median in ms.
inline double MedianOfMaxima(const std::function<void()>& work, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> maxima;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    work();
    double elapsed = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    maxima.push_back(slowest);
  }
  std::sort(maxima.begin(), maxima.end());
  return maxima[maxima.size() / 2] * 1e3;
}

}  // namespace bench
