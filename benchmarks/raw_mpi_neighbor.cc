// Raw-MPI floor for the neighbor_allreduce benchmark (bench_neighbor.py measures flock the
// same way): one float32 neighbor average on the static ExponentialGraph, nothing else.
//
// Topology: rank r sends to (r + 2^k) mod n and receives from (r - 2^k) mod n for every
// 2^k < n; uniform weights w = 1 / (indegree + 1). One iteration computes
// out = w·x + Σ_j w·recv_j, two ways (both are reported; the faster is the floor):
//   raw_isend                MPI_Irecv from every in-neighbour into its own buffer,
//                            MPI_Isend of x to every out-neighbour, MPI_Waitall, then the
//                            weighted sum as a plain float loop;
//   raw_neighbor_allgather   MPI_Neighbor_allgather on a communicator from
//                            MPI_Dist_graph_create_adjacent, then the same loop.
//
// Cases: "sizes", 4 KiB .. 64 MiB in powers of 4; "resnet50", the 25,557,032 float32
// gradients of ResNet-50 (161 tensors, see ResNet50ParamSizes) as one fused buffer.
//
// Protocol (as raw_mpi_allreduce.cc): per case and method, warm-up iterations (5; 3 from
// 4 MiB), then timed ones (50; 20 from 4 MiB), each MPI_Barrier, clock, one iteration,
// clock. The output of the first warm-up iteration is checked against the expected average
// on every rank (abort with a message if wrong). An iteration's time is the max over ranks;
// rank 0 prints one JSON line per case, size and method with the median, min and max of
// those maxima in milliseconds. The two methods alternate size by size.
//
// Run: flockrun -np 2 build/benchmarks/raw_mpi_neighbor [--max-bytes N] [--reps N]
//      [--method isend|allgather|both] [--no-resnet50] [--thread-multiple]
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "raw_mpi_protocol.h"

namespace {

using bench::kMaxBytes;
using bench::kMinBytes;
using bench::WarmupsFor;
constexpr int kResNet50Tensors = 161;
constexpr long kResNet50Params = 25557032;

struct Options {
  long max_bytes = kMaxBytes;
  int reps = 0;  // 0: the protocol's default for the size
  bool isend = true;
  bool allgather = true;
  bool resnet50 = true;
  bool thread_multiple = false;  // initialize MPI the way flock does
};

int RepsFor(long bytes, const Options& options) {
  return bench::RepsFor(bytes, options.reps);
}

bool ParseArgs(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--max-bytes" && i + 1 < argc) {
      options->max_bytes = std::atol(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      options->reps = std::atoi(argv[++i]);
    } else if (arg == "--method" && i + 1 < argc) {
      const std::string method = argv[++i];
      options->isend = method == "isend" || method == "both";
      options->allgather = method == "allgather" || method == "both";
      if (!options->isend && !options->allgather) {
        std::fprintf(stderr, "--method must be isend, allgather or both, not %s\n", argv[i]);
        return false;
      }
    } else if (arg == "--no-resnet50") {
      options->resnet50 = false;
    } else if (arg == "--thread-multiple") {
      options->thread_multiple = true;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return false;
    }
  }
  return true;
}

// The element counts of torchvision's resnet50().parameters(), in order (BatchNorm running
// statistics are buffers, not parameters, so they have no gradient): conv1 7x7 3->64, bn1
// weight and bias; four stages of 3, 4, 6, 3 Bottleneck blocks of width 64, 128, 256, 512
// (expansion 4), each block conv1 1x1, bn1, conv2 3x3, bn2, conv3 1x1, bn3 and, in a stage's
// first block, downsample conv 1x1 and bn; fc 2048->1000 weight and bias.
// 3 + 16 * 9 + 4 * 3 + 2 = 161 tensors, 25,557,032 parameters.
std::vector<long> ResNet50ParamSizes() {
  std::vector<long> sizes;
  auto conv = [&sizes](long in, long out, long k) { sizes.push_back(out * in * k * k); };
  auto bn = [&sizes](long channels) { sizes.insert(sizes.end(), 2, channels); };
  conv(3, 64, 7);
  bn(64);
  const int blocks[] = {3, 4, 6, 3};
  long in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const long width = 64L << stage;
    for (int block = 0; block < blocks[stage]; ++block) {
      conv(in, width, 1);
      bn(width);
      conv(width, width, 3);
      bn(width);
      conv(width, 4 * width, 1);
      bn(4 * width);
      if (block == 0) {
        conv(in, 4 * width, 1);
        bn(4 * width);
      }
      in = 4 * width;
    }
  }
  sizes.push_back(1000L * 2048);
  sizes.push_back(1000);
  return sizes;
}

// ExponentialGraph(n) as seen from one rank, with its uniform weight.
struct Neighbors {
  std::vector<int> in, out;
  float weight = 1.0f;
};

Neighbors ExponentialNeighbors(int rank, int size) {
  Neighbors neighbors;
  for (int step = 1; step < size; step *= 2) {
    neighbors.out.push_back((rank + step) % size);
    neighbors.in.push_back((rank - step + size) % size);
  }
  neighbors.weight = 1.0f / static_cast<float>(neighbors.in.size() + 1);
  return neighbors;
}

// Rank r's input: distinct per rank and per element, exact in float32.
float InputValue(int rank, size_t i) {
  return static_cast<float>(rank + 1) + 0.25f * static_cast<float>(i % 13);
}

// out = w·x + Σ_j w·recv[j], one vectorizable pass per term.
void WeightedSum(float weight, const std::vector<float>& x, const std::vector<const float*>& recv,
                 std::vector<float>& out) {
  const size_t count = x.size();
  for (size_t i = 0; i < count; ++i) out[i] = weight * x[i];
  for (const float* r : recv) {
    for (size_t i = 0; i < count; ++i) out[i] += weight * r[i];
  }
}

// Every element of out against the uniform average of this rank's and its in-neighbours'
// inputs, computed in double.
bool CheckAverage(const Neighbors& neighbors, int rank, const std::vector<float>& out,
                  const char* what) {
  for (size_t i = 0; i < out.size(); ++i) {
    double sum = InputValue(rank, i);
    for (int source : neighbors.in) sum += InputValue(source, i);
    const double want = sum / static_cast<double>(neighbors.in.size() + 1);
    if (std::fabs(out[i] - want) > 1e-5 * std::fabs(want)) {
      std::fprintf(stderr,
                   "rank %d: %s: wrong neighbor average at element %zu: got %.7g, want %.7g\n",
                   rank, what, i, static_cast<double>(out[i]), want);
      return false;
    }
  }
  return true;
}

// One neighbor_allreduce step with point-to-point messages.
class IsendExchange {
 public:
  IsendExchange(const Neighbors& neighbors, size_t count)
      : neighbors_(neighbors),
        recv_(neighbors.in.size(), std::vector<float>(count)),
        requests_(neighbors.in.size() + neighbors.out.size()) {
    for (const auto& buffer : recv_) recv_ptrs_.push_back(buffer.data());
  }
  void Run(const std::vector<float>& x, std::vector<float>& out) {
    const int count = static_cast<int>(x.size());
    const size_t in = neighbors_.in.size();
    for (size_t j = 0; j < in; ++j) {
      BENCH_MPI_CHECK(MPI_Irecv(recv_[j].data(), count, MPI_FLOAT, neighbors_.in[j], kTag,
                                MPI_COMM_WORLD, &requests_[j]));
    }
    for (size_t k = 0; k < neighbors_.out.size(); ++k) {
      BENCH_MPI_CHECK(MPI_Isend(x.data(), count, MPI_FLOAT, neighbors_.out[k], kTag, MPI_COMM_WORLD,
                                &requests_[in + k]));
    }
    BENCH_MPI_CHECK(
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    WeightedSum(neighbors_.weight, x, recv_ptrs_, out);
  }

 private:
  static constexpr int kTag = 7;
  const Neighbors& neighbors_;
  std::vector<std::vector<float>> recv_;
  std::vector<const float*> recv_ptrs_;
  std::vector<MPI_Request> requests_;
};

// One neighbor_allreduce step with MPI's neighborhood collective.
class AllgatherExchange {
 public:
  AllgatherExchange(const Neighbors& neighbors, MPI_Comm graph, size_t count)
      : neighbors_(neighbors), graph_(graph), gathered_(neighbors.in.size() * count) {
    for (size_t j = 0; j < neighbors.in.size(); ++j) recv_ptrs_.push_back(&gathered_[j * count]);
  }
  void Run(const std::vector<float>& x, std::vector<float>& out) {
    const int count = static_cast<int>(x.size());
    BENCH_MPI_CHECK(MPI_Neighbor_allgather(x.data(), count, MPI_FLOAT, gathered_.data(), count,
                                           MPI_FLOAT, graph_));
    WeightedSum(neighbors_.weight, x, recv_ptrs_, out);
  }

 private:
  const Neighbors& neighbors_;
  MPI_Comm graph_;
  std::vector<float> gathered_;  // in-neighbours' blocks in the order of neighbors.in
  std::vector<const float*> recv_ptrs_;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Case {
  const char* name;  // "sizes" or "resnet50"
  long bytes;
  int tensors;  // how many tensors flock's side submits for this case
};

// What every measurement shares.
struct Context {
  Options options;
  Neighbors neighbors;
  MPI_Comm graph = MPI_COMM_NULL;  // ExponentialGraph as a distributed graph communicator
  int rank = 0;
  int size = 1;
};

void Report(const char* impl, const Case& c, const Context& ctx,
            const std::vector<double>& slowest) {
  std::printf(
      "{\"impl\": \"%s%s\", \"case\": \"%s\", \"np\": %d, \"bytes\": %ld, \"tensors\": %d, "
      "\"reps\": %d, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f}\n",
      impl, ctx.options.thread_multiple ? "+mt" : "", c.name, ctx.size, c.bytes, c.tensors,
      static_cast<int>(slowest.size()), Median(slowest) * 1e3,
      *std::min_element(slowest.begin(), slowest.end()) * 1e3,
      *std::max_element(slowest.begin(), slowest.end()) * 1e3);
  std::fflush(stdout);
}

// Warm-up (the first iteration's output checked), then timed iterations; rank 0 reports.
// Returns false when the check failed.
template <typename Exchange>
bool Measure(const char* impl, const Case& c, const Context& ctx, Exchange& exchange,
             const std::vector<float>& x, std::vector<float>& out) {
  std::fill(out.begin(), out.end(), 0.0f);  // the checked output must be this method's
  for (int i = 0; i < WarmupsFor(c.bytes); ++i) {
    BENCH_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    exchange.Run(x, out);
    if (i == 0 && !CheckAverage(ctx.neighbors, ctx.rank, out, impl)) return false;
  }
  const int reps = RepsFor(c.bytes, ctx.options);
  std::vector<double> elapsed(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    BENCH_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double start = MPI_Wtime();
    exchange.Run(x, out);
    elapsed[static_cast<size_t>(i)] = MPI_Wtime() - start;
  }
  // Element-wise MAX over ranks of each iteration's elapsed time.
  std::vector<double> slowest(static_cast<size_t>(reps));
  BENCH_MPI_CHECK(
      MPI_Reduce(elapsed.data(), slowest.data(), reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
  if (ctx.rank == 0) Report(impl, c, ctx, slowest);
  return true;
}

// Both methods (as selected) on one case, each with its own receive buffers; false when a
// check failed.
bool MeasureCase(const Case& c, const Context& ctx) {
  const size_t count = static_cast<size_t>(c.bytes) / sizeof(float);
  std::vector<float> x(count), out(count);
  for (size_t i = 0; i < count; ++i) x[i] = InputValue(ctx.rank, i);
  if (ctx.options.isend) {
    IsendExchange exchange(ctx.neighbors, count);
    if (!Measure("raw_isend", c, ctx, exchange, x, out)) return false;
  }
  if (ctx.options.allgather) {
    AllgatherExchange exchange(ctx.neighbors, ctx.graph, count);
    if (!Measure("raw_neighbor_allgather", c, ctx, exchange, x, out)) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Context ctx;
  if (!ParseArgs(argc, argv, &ctx.options)) return 2;
  if (ctx.options.thread_multiple) {
    int provided = 0;
    BENCH_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  } else {
    BENCH_MPI_CHECK(MPI_Init(&argc, &argv));
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);

  const std::vector<long> resnet = ResNet50ParamSizes();
  long resnet_params = 0;
  for (long n : resnet) resnet_params += n;
  if (static_cast<int>(resnet.size()) != kResNet50Tensors || resnet_params != kResNet50Params) {
    std::fprintf(stderr, "ResNet-50 list: %zu tensors, %ld params; want %d, %ld\n", resnet.size(),
                 resnet_params, kResNet50Tensors, kResNet50Params);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  ctx.neighbors = ExponentialNeighbors(ctx.rank, ctx.size);
  const Neighbors& nb = ctx.neighbors;
  BENCH_MPI_CHECK(MPI_Dist_graph_create_adjacent(
      MPI_COMM_WORLD, static_cast<int>(nb.in.size()), nb.in.data(), MPI_UNWEIGHTED,
      static_cast<int>(nb.out.size()), nb.out.data(), MPI_UNWEIGHTED, MPI_INFO_NULL,
      /*reorder=*/0, &ctx.graph));

  std::vector<Case> cases;
  for (long bytes = kMinBytes; bytes <= ctx.options.max_bytes; bytes *= 4) {
    cases.push_back({"sizes", bytes, 1});
  }
  if (ctx.options.resnet50) {
    cases.push_back({"resnet50", resnet_params * static_cast<long>(sizeof(float)), 1});
  }
  for (const Case& c : cases) {
    if (!MeasureCase(c, ctx)) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_free(&ctx.graph);
  MPI_Finalize();
  return 0;
}
