// The GPU benchmark's output on rank 0: a header saying what ran where and
// how it was timed, a table per op, and the same rows as JSON.
#include <cstdio>
#include <string>

#include "gpu/gpu_bench.h"

namespace gpu_bench {
namespace {

std::string SizeLabel(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + units[unit];
}

bool HasTarget(const Row& row) {
  return row.bytes >= kTargetFromBytes;
}

double Ratio(const Row& row) {
  return row.raw_us > 0 ? row.flock_us / row.raw_us : 0;
}

// Whether the row meets its target: "ok", "MISSED", or "n/a" on the fake device.
const char* Verdict(const RunInfo& info, const Row& row) {
  if (info.fake) return "n/a";
  return Ratio(row) <= kTargetRatio ? "ok" : "MISSED";
}

std::string Counts(int value, const char* protocol) {
  return value >= 0 ? std::to_string(value) : std::string(protocol);
}

// NCCL_VERSION_CODE's form since 2.9: major * 10000 + minor * 100 + patch.
std::string NcclVersion(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

void PrintHeader(const RunInfo& info) {
  std::printf("flock GPU benchmark: flock vs raw NCCL, np %d, host %s, rank 0 on %s, NCCL %s\n",
              info.np, info.host.c_str(), info.device.c_str(),
              NcclVersion(info.nccl_version).c_str());
  if (info.via_mpi) {
    std::printf(
        "FLOCK_GPU_VIA_MPI=1: flock's side moves device data over MPI through pinned "
        "memory, the raw side over NCCL\n");
  }
  if (info.fake) {
    std::printf(
        "fake device: timings are not GPU timings (this run only shows the benchmark "
        "works)\n");
  }
  std::printf(
      "float32; each call: MPI_Barrier, then timed on every rank until its result is in "
      "the output;\n");
  std::printf(
      "a call's time is the slowest rank's; median over %s timed calls after %s "
      "warm-up call(s);\n",
      Counts(info.iters > 0 ? info.iters : -1, "50 (20 from 4 MiB)").c_str(),
      Counts(info.warmup, "5 (3 from 4 MiB)").c_str());
  std::printf(
      "median of %d round(s), raw and flock alternating which goes first; "
      "target: flock/raw <= %.2f from %s\n",
      info.rounds, kTargetRatio, SizeLabel(kTargetFromBytes).c_str());
}

void PrintTable(Op op, const RunInfo& info, const std::vector<Row>& rows) {
  if (op == Op::kAllreduce) {
    std::printf("\nallreduce (sum): ncclAllReduce vs flock's engine\n");
  } else {
    // The ring's distinct neighbours: 2, 1 at np 2, none at np 1 (the op is then a scaled copy).
    std::printf(
        "\nneighbor_allreduce on a ring (%d neighbour(s) and self, weight 1/%d each): "
        "grouped ncclSend/ncclRecv + flock's kernels vs flock's engine\n",
        info.neighbours, info.neighbours + 1);
  }
  std::printf("%12s %9s %12s %12s %10s  %s\n", "bytes", "size", "raw us", "flock us", "flock/raw",
              "target");
  for (const Row& row : rows) {
    if (row.op != op) continue;
    std::string target = "-";
    if (HasTarget(row)) {
      char text[32];
      std::snprintf(text, sizeof(text), "<= %.2f %s", kTargetRatio, Verdict(info, row));
      target = text;
    }
    std::printf("%12lld %9s %12.1f %12.1f %10.2f  %s\n", static_cast<long long>(row.bytes),
                SizeLabel(row.bytes).c_str(), row.raw_us, row.flock_us, Ratio(row), target.c_str());
  }
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

// meets_target: null below the target's sizes and on the fake device.
void WriteRow(std::FILE* file, const RunInfo& info, const Row& row, bool last) {
  std::fprintf(file,
               "    {\"op\": \"%s\", \"bytes\": %lld, \"iters\": %d, \"warmup\": %d, "
               "\"raw_us\": %.3f, \"flock_us\": %.3f, \"ratio\": %.4f, ",
               OpName(row.op), static_cast<long long>(row.bytes), row.iters, row.warmup, row.raw_us,
               row.flock_us, Ratio(row));
  const std::string verdict = Verdict(info, row);
  if (HasTarget(row)) {
    std::fprintf(file, "\"target\": %.2f, \"meets_target\": %s}", kTargetRatio,
                 verdict == "n/a"  ? "null"
                 : verdict == "ok" ? "true"
                                   : "false");
  } else {
    std::fprintf(file, "\"target\": null, \"meets_target\": null}");
  }
  std::fprintf(file, "%s\n", last ? "" : ",");
}

}  // namespace

void PrintReport(const RunInfo& info, const std::vector<Row>& rows) {
  PrintHeader(info);
  for (Op op : {Op::kAllreduce, Op::kNeighbor}) {
    for (const Row& row : rows) {
      if (row.op == op) {
        PrintTable(op, info, rows);
        break;
      }
    }
  }
  std::fflush(stdout);
}

bool WriteJson(const std::string& path, const RunInfo& info, const std::vector<Row>& rows) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  std::fprintf(file,
               "{\n  \"benchmark\": \"gpu_bench\",\n  \"np\": %d,\n  \"host\": %s,\n"
               "  \"device\": %s,\n  \"fake_device\": %s,\n  \"flock_via_mpi\": %s,\n"
               "  \"nccl_version\": %d,\n"
               "  \"dtype\": \"float32\",\n  \"rounds\": %d,\n  \"ring_neighbours\": %d,\n"
               "  \"time\": \"median over iterations of the slowest rank's call, "
               "median over rounds\",\n  \"rows\": [\n",
               info.np, JsonString(info.host).c_str(), JsonString(info.device).c_str(),
               info.fake ? "true" : "false", info.via_mpi ? "true" : "false", info.nccl_version,
               info.rounds, info.neighbours);
  for (size_t i = 0; i < rows.size(); ++i) WriteRow(file, info, rows[i], i + 1 == rows.size());
  std::fprintf(file, "  ]\n}\n");
  return std::fclose(file) == 0;
}

}  // namespace gpu_bench
