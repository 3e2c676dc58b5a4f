// The engine measured from C++, without Python: the same three cases as
// engine_floor.cc (100 x 4 KB, one 64 MB, a 4-byte allreduce), each run as
// raw MPI_Allreduce calls and as flock engine requests, alternating round by
// round in one process so both see the same machine state. It separates what
// the engine costs from what the Python submission path costs. For 100 x 4 KB
// it also times the fusion floor: the 100 tensors already packed into one
// buffer and reduced by one MPI_Allreduce, the best any fusing engine can do.
//
// Per iteration: MPI_Barrier, clock, work, clock; an iteration's time is the
// slowest rank's; a round reports the median; rank 0 prints one JSON line per
// case and implementation with the median over rounds.
// Run: flockrun -np 2 build/benchmarks/engine_cpp [--rounds 5] [--reps 30] [--case many_small_ms]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "flock/requests/op_signature.h"
#include "flock/runtime/runtime.h"
#include "flock/transport/registry.h"
#include "raw_mpi_protocol.h"

namespace {

using flock::DataType;
using flock::Engine;
using flock::HandleId;
using flock::TensorView;

using bench::MedianOfMaxima;

// `wait_follows`: a blocking call (waited for at once), as Python submits it.
HandleId SubmitSum(Engine& engine, const std::string& name, std::vector<float>& data,
                   bool wait_follows = false) {
  flock::OpRequest request = flock::MakeRequest(
      flock::OpKind::kAllreduce, name,
      TensorView{data.data(), DataType::kFloat32, {static_cast<int64_t>(data.size())}});
  request.reduce_op = flock::ReduceOp::kSum;
  TensorView output = request.tensor;
  auto handle = engine.Submit(std::move(request), output, nullptr, wait_follows);
  if (!handle.ok()) {
    std::fprintf(stderr, "submit failed: %s\n", handle.status().ToString().c_str());
    std::exit(1);
  }
  return handle.value();
}

void WaitOrDie(Engine& engine, HandleId handle) {
  auto done = engine.Wait(handle, std::chrono::milliseconds(100), nullptr);
  const flock::Status status = done.ok() ? done.value().status : done.status();
  if (!status.ok()) {
    std::fprintf(stderr, "op failed: %s\n", status.ToString().c_str());
    std::exit(1);
  }
}

void RawSum(std::vector<float>& data) {
  MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
}

struct Case {
  const char* name;
  std::function<void()> raw;
  std::function<void()> flock;
  int warmup;
  int reps;
  std::function<void()> fused_floor;  // may be empty
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, reps = 30;
  std::string only;  // --case NAME runs one case (e.g. under perf)
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--case") == 0) only = argv[i + 1];
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  auto config = flock::Config::FromEnvironment();
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 2;
  auto created = flock::Runtime::Create(config.value());
  if (!created.ok()) return std::fprintf(stderr, "%s\n", created.status().ToString().c_str()), 1;
  flock::Runtime& runtime = *created.value();
  Engine& engine = runtime.engine();

  std::vector<std::vector<float>> small(100, std::vector<float>(1024, 1.0f));
  std::vector<float> large(16 << 20, 1.0f);
  std::vector<float> one(1, 1.0f);
  std::vector<float> packed(100 * 1024, 1.0f);
  std::vector<std::string> small_names;
  for (int i = 0; i < 100; ++i) small_names.push_back("small." + std::to_string(i));

  const std::vector<Case> cases = {
      {"many_small_ms",
       [&] {
         for (auto& t : small) RawSum(t);
       },
       [&] {
         std::vector<HandleId> handles;
         for (int i = 0; i < 100; ++i)
           handles.push_back(SubmitSum(engine, small_names[i], small[i]));
         for (HandleId h : handles) WaitOrDie(engine, h);
       },
       3, reps, [&] { RawSum(packed); }},
      {"one_large_ms", [&] { RawSum(large); },
       [&] { WaitOrDie(engine, SubmitSum(engine, "large", large, true)); }, 2,
       std::max(reps / 2, 10)},
      {"latency_ms", [&] { RawSum(one); },
       [&] { WaitOrDie(engine, SubmitSum(engine, "one", one, true)); }, 20, reps * 10},
  };

  for (const Case& c : cases) {
    if (!only.empty() && only != c.name) continue;
    std::vector<double> raw_rounds, flock_rounds, floor_rounds;
    for (int round = 0; round < rounds; ++round) {
      if (c.fused_floor) floor_rounds.push_back(MedianOfMaxima(c.fused_floor, c.warmup, c.reps));
      // Alternate which goes first so neither always follows the other.
      if (round % 2 == 0) {
        raw_rounds.push_back(MedianOfMaxima(c.raw, c.warmup, c.reps));
        flock_rounds.push_back(MedianOfMaxima(c.flock, c.warmup, c.reps));
      } else {
        flock_rounds.push_back(MedianOfMaxima(c.flock, c.warmup, c.reps));
        raw_rounds.push_back(MedianOfMaxima(c.raw, c.warmup, c.reps));
      }
    }
    if (runtime.rank() == 0) {
      std::sort(raw_rounds.begin(), raw_rounds.end());
      std::sort(flock_rounds.begin(), flock_rounds.end());
      const double raw = raw_rounds[rounds / 2], ours = flock_rounds[rounds / 2];
      std::printf(
          "{\"case\": \"%s\", \"np\": %d, \"raw_ms\": %.4f, \"flock_cpp_ms\": %.4f, "
          "\"ratio\": %.3f",
          c.name, runtime.size(), raw, ours, ours / raw);
      if (!floor_rounds.empty()) {
        std::sort(floor_rounds.begin(), floor_rounds.end());
        const double floor = floor_rounds[rounds / 2];
        std::printf(", \"fused_floor_ms\": %.4f, \"floor_ratio\": %.3f", floor, floor / raw);
      }
      std::printf("}\n");
      std::fflush(stdout);
    }
  }
  created.value().reset();
  flock::FinalizeTransports();
  return 0;
}
