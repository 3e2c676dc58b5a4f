// What the raw-MPI floor programs share with each other and with flock's Python
// benchmarks (bench_allreduce.py): the sizes, warm-up and repetition counts of
// the measuring protocol, and one check macro for MPI calls.
#pragma once

#include <mpi.h>

#include <cstdio>

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

}  // namespace bench
