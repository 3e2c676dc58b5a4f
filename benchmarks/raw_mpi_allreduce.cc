// Raw-MPI floor for the allreduce benchmark: MPI_Allreduce(MPI_IN_PLACE,
// float32, MPI_SUM) on MPI_COMM_WORLD, nothing else.
//
// Protocol (the same in bench_allreduce.py): for each size from 4 KiB to
// 64 MiB in powers of 4, run warm-up iterations, then timed iterations. Each
// timed iteration is MPI_Barrier, start clock, one allreduce, stop clock. A
// rank's elapsed times are reduced with MAX onto rank 0 (the iteration took as
// long as its slowest rank) and rank 0 prints one JSON line per size with the
// median, min and max of those per-iteration maxima, in milliseconds.
//
// Run: flockrun -np 2 build/benchmarks/raw_mpi_allreduce [--max-bytes N]
//      [--reps N] [--thread-multiple] [--worker-thread]
//
// Two flags copy parts of flock's threading model without the rest of flock:
// --thread-multiple initializes MPI as flock does (MPI_THREAD_MULTIPLE);
// --worker-thread (implies it) makes every barrier and allreduce on a second
// thread, handed over and waited for through a condition variable, as
// flock's engine thread does.
#include <mpi.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "raw_mpi_protocol.h"

namespace {

using bench::kMaxBytes;
using bench::kMinBytes;
using bench::WarmupsFor;

struct Options {
  long max_bytes = kMaxBytes;
  int reps = 0;                  // 0: the protocol's default for the size
  bool thread_multiple = false;  // initialize MPI the way flock does
  bool worker_thread = false;    // make the MPI calls on a second thread
};

int RepsFor(long bytes, const Options& options) {
  return bench::RepsFor(bytes, options.reps);
}

bool ParseArgs(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
      options->max_bytes = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      options->reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--thread-multiple") == 0) {
      options->thread_multiple = true;
    } else if (std::strcmp(argv[i], "--worker-thread") == 0) {
      options->thread_multiple = options->worker_thread = true;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return false;
    }
  }
  return true;
}

// Runs calls on its own thread when enabled, else on the caller's.
class Worker {
 public:
  explicit Worker(bool enabled) {
    if (enabled) thread_ = std::thread([this] { Loop(); });
  }
  ~Worker() {
    if (!thread_.joinable()) return;
    Call(nullptr);
    thread_.join();
  }
  void Call(std::function<void()> job) {  // returns when job has run; nullptr stops
    if (!thread_.joinable()) {
      if (job) job();
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = std::move(job);
    posted_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !posted_; });
  }

 private:
  void Loop() {
    for (bool running = true; running;) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return posted_; });
      running = static_cast<bool>(job_);
      if (running) job_();
      posted_ = false;
      cv_.notify_all();
    }
  }

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool posted_ = false;
};

void AllreduceInPlace(std::vector<float>& buffer) {
  BENCH_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()),
                                MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
}

// Every rank contributes rank + 1; the sum must be size * (size + 1) / 2.
bool CheckSum(std::vector<float>& buffer, int rank, int size) {
  std::fill(buffer.begin(), buffer.end(), static_cast<float>(rank + 1));
  AllreduceInPlace(buffer);
  const float want = static_cast<float>(size) * (size + 1) / 2;
  return buffer.front() == want && buffer.back() == want;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void Report(const Options& options, int size, long bytes, const std::vector<double>& slowest) {
  const double median = Median(slowest) * 1e3;
  const double fastest = *std::min_element(slowest.begin(), slowest.end()) * 1e3;
  const double worst = *std::max_element(slowest.begin(), slowest.end()) * 1e3;
  std::printf(
      "{\"impl\": \"raw_mpi%s%s\", \"np\": %d, \"bytes\": %ld, \"reps\": %d, "
      "\"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f}\n",
      options.thread_multiple ? "+mt" : "", options.worker_thread ? "+thread" : "", size, bytes,
      static_cast<int>(slowest.size()), median, fastest, worst);
  std::fflush(stdout);
}

// Times one size; returns false when the correctness check failed.
bool MeasureSize(long bytes, const Options& options, Worker& worker, int rank, int size) {
  std::vector<float> buffer(static_cast<size_t>(bytes) / sizeof(float));
  if (!CheckSum(buffer, rank, size)) {
    std::fprintf(stderr, "rank %d: wrong allreduce result at %ld bytes\n", rank, bytes);
    return false;
  }
  std::fill(buffer.begin(), buffer.end(), 0.0f);  // sums of zeros stay finite
  auto barrier = [] { BENCH_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); };
  auto allreduce = [&buffer] { AllreduceInPlace(buffer); };
  for (int i = 0; i < WarmupsFor(bytes); ++i) {
    worker.Call(barrier);
    worker.Call(allreduce);
  }
  const int reps = RepsFor(bytes, options);
  std::vector<double> elapsed(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    worker.Call(barrier);
    const double start = MPI_Wtime();
    worker.Call(allreduce);
    elapsed[static_cast<size_t>(i)] = MPI_Wtime() - start;
  }
  // Element-wise MAX over ranks of each iteration's elapsed time.
  std::vector<double> slowest(static_cast<size_t>(reps));
  BENCH_MPI_CHECK(
      MPI_Reduce(elapsed.data(), slowest.data(), reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  if (rank == 0) Report(options, size, bytes, slowest);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseArgs(argc, argv, &options)) return 2;
  if (options.thread_multiple) {
    int provided = 0;
    BENCH_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  } else {
    BENCH_MPI_CHECK(MPI_Init(&argc, &argv));
  }
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  {
    Worker worker(options.worker_thread);
    for (long bytes = kMinBytes; bytes <= options.max_bytes && status == 0; bytes *= 4) {
      if (!MeasureSize(bytes, options, worker, rank, size)) status = 1;
    }
  }
  if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}
