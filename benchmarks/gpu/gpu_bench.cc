// flock on CUDA tensors vs the raw NCCL calls doing the same work, in one MPI
// process per rank (gpu_bench.h lists what each side runs): allreduce and a
// ring's neighbor_allreduce, float32, 4 KiB to 256 MiB in powers of 4.
//
// Per size: each side's result is checked once (rank r holds r + 1 + i % 7),
// then, per round, raw and flock are timed as in the CPU benchmarks
// (raw_mpi_protocol.h): warm-up calls, then timed calls, each MPI_Barrier,
// clock, call, clock; a call's time is the slowest rank's; the median over
// the calls. Rounds alternate which side goes first; the median round counts.
// Rank 0 prints a table per op with flock/raw and the target (<= 1.10 from
// 1 MiB), and with --json writes the rows.
//
// Run on a GPU machine (one rank per GPU):
//   mpirun -np 8 build/benchmarks/flock_gpu_bench [--max-bytes 64M] [--iters N]
//       [--warmup N] [--rounds N] [--op allreduce|neighbor_allreduce|all] [--json FILE]
// flock_gpu_bench_fake is the same program on the fake device (ctest
// gpu_benchmark_fake_np2): it proves the benchmark works; its times are not
// GPU times.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "flock/transport/registry.h"
#include "gpu/gpu_bench.h"
#include "raw_mpi_protocol.h"

namespace gpu_bench {
namespace {

constexpr int64_t kMinBytes = 4L << 10;
constexpr int64_t kMaxBytes = 256L << 20;

struct Options {
  int64_t max_bytes = kMaxBytes;
  int iters = 0;    // 0: the protocol's
  int warmup = -1;  // < 0: the protocol's
  int rounds = 3;
  std::string json;
  std::vector<Op> ops = {Op::kAllreduce, Op::kNeighbor};
};

const char kUsage[] =
    "usage: gpu_bench [--max-bytes N[K|M|G]] [--iters N] [--warmup N] [--rounds N]\n"
    "                 [--op allreduce|neighbor_allreduce|all] [--json FILE]\n"
    "  sizes 4 KiB, 16 KiB, ... up to --max-bytes (default 256M); --iters: timed calls\n"
    "  per size and round (default 50, 20 from 4 MiB); --warmup (default 5, 3 from 4 MiB);\n"
    "  --rounds (default 3)\n";

// "64M" -> 64 MiB; false for anything but digits and one K, M or G.
bool ParseBytes(const char* text, int64_t* bytes) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || value <= 0) return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  *bytes = static_cast<int64_t>(value) << shift;
  return *end == '\0';
}

bool ParseCount(const char* text, int minimum, int* value) {
  char* end = nullptr;
  const long parsed = std::strtol(text, &end, 10);
  *value = static_cast<int>(parsed);
  return end != text && *end == '\0' && parsed >= minimum && parsed <= 1000000;
}

bool ParseOp(const std::string& text, std::vector<Op>* ops) {
  if (text == "allreduce") *ops = {Op::kAllreduce};
  if (text == "neighbor_allreduce") *ops = {Op::kNeighbor};
  if (text == "all") *ops = {Op::kAllreduce, Op::kNeighbor};
  return text == "allreduce" || text == "neighbor_allreduce" || text == "all";
}

// An error message, or "" when every argument was understood.
std::string ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return "help";
    if (i + 1 >= argc) return flag + " needs a value (or is unknown)";
    const char* value = argv[++i];
    bool ok = true;
    if (flag == "--max-bytes") {
      ok = ParseBytes(value, &o->max_bytes) && o->max_bytes >= kMinBytes;
    } else if (flag == "--iters") {
      ok = ParseCount(value, 1, &o->iters);
    } else if (flag == "--warmup") {
      ok = ParseCount(value, 0, &o->warmup);
    } else if (flag == "--rounds") {
      ok = ParseCount(value, 1, &o->rounds);
    } else if (flag == "--op") {
      ok = ParseOp(value, &o->ops);
    } else if (flag == "--json") {
      o->json = value;
    } else {
      return "unknown option " + flag;
    }
    if (!ok) return "bad value for " + flag + ": " + value;
  }
  return "";
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Both sides' results checked on every rank; the job ends if any is wrong.
void CheckBothSides(GpuBench& bench, Op op, int64_t bytes) {
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  const bool raw_ok = bench.Check(op, /*flock=*/false, count);
  const bool flock_ok = bench.Check(op, /*flock=*/true, count);
  int ok = raw_ok && flock_ok ? 1 : 0, all_ok = 0;
  BENCH_MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (!all_ok) Die(std::string("wrong result of ") + OpName(op) + " (see the rank's message)");
}

Row Measure(GpuBench& bench, Op op, int64_t bytes, const Options& o) {
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  Row row{op, bytes, bench::RepsFor(bytes, o.iters),
          o.warmup >= 0 ? o.warmup : bench::WarmupsFor(bytes)};
  std::vector<double> raw, ours;
  auto time_raw = [&] {
    raw.push_back(1e3 *
                  bench::MedianOfMaxima([&] { bench.Raw(op, count); }, row.warmup, row.iters));
  };
  auto time_flock = [&] {
    ours.push_back(1e3 *
                   bench::MedianOfMaxima([&] { bench.Flock(op, count); }, row.warmup, row.iters));
  };
  for (int round = 0; round < o.rounds; ++round) {
    if (round % 2 == 0) {
      time_raw();
      time_flock();
    } else {
      time_flock();
      time_raw();
    }
  }
  row.raw_us = Median(raw);
  row.flock_us = Median(ours);
  return row;
}

RunInfo DescribeRun(const GpuBench& bench, const Options& o) {
  RunInfo info;
  info.np = bench.size();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  info.host = host;
#if defined(FLOCK_GPU_BENCH_FAKE)
  info.fake = true;
  info.device = "cuda:" + std::to_string(bench.device()) + " (fake device)";
#else
  cudaDeviceProp properties;
  GPU_BENCH_CUDA(cudaGetDeviceProperties(&properties, bench.device()));
  info.device = "cuda:" + std::to_string(bench.device()) + " (" + properties.name + ")";
#endif
  GPU_BENCH_NCCL(ncclGetVersion(&info.nccl_version));
  info.via_mpi = bench.flock_via_mpi();
  info.iters = o.iters;
  info.warmup = o.warmup;
  info.rounds = o.rounds;
  info.neighbours = static_cast<int>(bench.peers().size());
  return info;
}

// Every size of every op; rank 0 reports.
void Run(flock::Runtime& runtime, const Options& o) {
  GpuBench bench(runtime, o.max_bytes);
  const RunInfo info = DescribeRun(bench, o);
  std::vector<Row> rows;
  for (Op op : o.ops) {
    for (int64_t bytes = kMinBytes; bytes <= o.max_bytes; bytes *= 4) {
      CheckBothSides(bench, op, bytes);
      rows.push_back(Measure(bench, op, bytes, o));
    }
  }
  if (bench.rank() != 0) return;
  PrintReport(info, rows);
  if (!o.json.empty() && !WriteJson(o.json, info, rows)) {
    Die("cannot write " + o.json + ": " + std::strerror(errno));
  }
  if (!o.json.empty()) std::printf("\nrows written to %s\n", o.json.c_str());
}

}  // namespace
}  // namespace gpu_bench

int main(int argc, char** argv) {
  auto config = flock::Config::FromEnvironment();
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 2;
  auto created = flock::Runtime::Create(config.value());
  if (!created.ok()) return std::fprintf(stderr, "%s\n", created.status().ToString().c_str()), 1;
  std::unique_ptr<flock::Runtime> runtime = std::move(created).value();

  gpu_bench::Options options;
  const std::string error = gpu_bench::ParseOptions(argc, argv, &options);
  if (error.empty()) gpu_bench::Run(*runtime, options);
  if (error == "help" && runtime->rank() == 0) std::printf("%s", gpu_bench::kUsage);
  if (!error.empty() && error != "help" && runtime->rank() == 0) {
    std::fprintf(stderr, "gpu_bench: %s\n%s", error.c_str(), gpu_bench::kUsage);
  }
  runtime.reset();  // collective: every rank shuts the engine down, then the GPU backend
  flock::FinalizeTransports();
  return error.empty() || error == "help" ? 0 : 2;
}
