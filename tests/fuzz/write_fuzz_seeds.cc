// write_fuzz_seeds DIR: writes the seed corpora of the fuzz targets into
// DIR/<target>/ (tests/fuzz in the repository), each file a small valid input
// made by flock's own encoders, so the fuzzers start from real messages.
// Rerun it after a wire format changes and commit what it wrote.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "flock/engine/coordinator.h"
#include "flock/engine/wire.h"
#include "flock/neighbor/neighbor_wire.h"
#include "flock/topology/generators.h"
#include "flock/topology/json_io.h"

namespace flock {
namespace {

std::string root;

void Write(const std::string& target, const std::string& name, const std::vector<char>& bytes) {
  std::filesystem::create_directories(root + "/" + target);
  const std::string path = root + "/" + target + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

void WriteText(const std::string& target, const std::string& name, const std::string& text) {
  Write(target, name, std::vector<char>(text.begin(), text.end()));
}

OpSignature Signature(OpKind kind, DataType dtype, std::vector<int64_t> shape,
                      const std::string& name, ReduceOp op = ReduceOp::kSum, int root_rank = 0) {
  OpRequest request = MakeRequest(kind, name, TensorView{nullptr, dtype, std::move(shape)});
  request.reduce_op = op;
  request.root = root_rank;
  return MakeSignature(request);
}

std::vector<ReadyEntry> Announcements() {
  return {
      {"grad.0", kNotCached, Signature(OpKind::kAllreduce, DataType::kFloat32, {4, 3}, "grad.0")},
      {"grad.1", kNotCached,
       Signature(OpKind::kAllreduce, DataType::kFloat16, {7}, "grad.1", ReduceOp::kAverage)},
      {"rows", kNotCached, Signature(OpKind::kAllgather, DataType::kInt64, {2, 5}, "rows")},
      {"params", kNotCached,
       Signature(OpKind::kBroadcast, DataType::kBFloat16, {3, 1, 2}, "params", ReduceOp::kSum, 1)},
      {"barrier.0", kDoNotCache, Signature(OpKind::kBarrier, DataType::kFloat32, {}, "barrier.0")},
  };
}

void WriteEngineSeeds() {
  const std::vector<ReadyEntry> entries = Announcements();
  Write("engine_ready", "one_allreduce", EncodeReady({entries[0]}));
  Write("engine_ready", "every_op", EncodeReady(entries));
  Write("engine_ready", "cached", EncodeReady({{"grad.0", 0, {}}, {"grad.1", 3, {}}, entries[2]}));
  Write("engine_ready", "empty", EncodeReady({}));
  // A CUDA neighbor op's announcement (its call number) and a withdrawal of it.
  Write("engine_ready", "neighbor_call",
        EncodeReady({{"mix", kNotCached,
                      Signature(OpKind::kNeighborAllreduce, DataType::kFloat32, {5}, "mix"), 3}}));
  Write("engine_ready", "withdrawal",
        EncodeWithdrawal({"mix", "mix", 3, OpKind::kNeighborAllreduce, "ranks disagree"}));

  // What a real coordinator answers two ranks: fused executes with cache ids,
  // the allgather with each rank's rows, a mismatch error, then shutdown.
  Coordinator coordinator(2, 1 << 20, 16);
  std::vector<ReadyEntry> other = entries;
  other[2].signature.dims[0] = 9;  // allgather: dim 0 may differ
  other.push_back({"odd", kNotCached, Signature(OpKind::kAllreduce, DataType::kInt32, {2}, "odd")});
  (void)coordinator.AddReady(0, entries, Clock::now());
  (void)coordinator.AddReady(1, other, Clock::now());
  std::vector<ReadyEntry> odd = {
      {"odd", kNotCached, Signature(OpKind::kAllreduce, DataType::kInt64, {2}, "odd")}};
  (void)coordinator.AddReady(0, odd, Clock::now());
  Write("engine_responses", "executes_and_error", EncodeResponses(coordinator.TakeResponses()));
  coordinator.AddShutdown(1);
  coordinator.AddShutdown(0);
  Write("engine_responses", "shutdown", EncodeResponses(coordinator.TakeResponses()));

  Coordinator neighbor(2, 1 << 20, 16);
  neighbor.Withdraw({"mix", "mix", 3, OpKind::kNeighborAllreduce, "ranks disagree"});
  Write("engine_responses", "withdrawn", EncodeResponses(neighbor.TakeResponses()));
}

void WriteNeighborSeeds() {
  const float values[3] = {1.5f, -2.0f, 4.25f};
  NeighborEntry data;
  data.name = "layer.weight";
  data.seq = 7;
  data.kind = static_cast<uint8_t>(OpKind::kNeighborAllreduce);
  data.shape = {3};
  data.scale = 0.25;
  data.check = true;
  data.payload_bytes = sizeof(values);
  data.payload = reinterpret_cast<const char*>(values);
  NeighborEntry lane = data;
  lane.name = "big";
  lane.shape = {1 << 18};
  lane.payload_bytes = 1 << 20;
  lane.lane_tag = 3;
  NeighborEntry expect = data;
  expect.type = NeighborEntryType::kExpect;
  NeighborEntry reject;
  reject.type = NeighborEntryType::kReject;
  reject.name = "layer.weight";
  reject.code = StatusCode::kMismatch;
  reject.message = "shape differs";
  NeighborEntry goodbye;
  goodbye.type = NeighborEntryType::kGoodbye;
  Write("neighbor_message", "one_inline", EncodeNeighborMessage({data}));
  Write("neighbor_message", "every_entry",
        EncodeNeighborMessage({data, lane, expect, reject, goodbye}));
  const double row = 2.0;
  NeighborEntry gathered = data;  // neighbor_allgather of a 0-d float64: one row
  gathered.kind = static_cast<uint8_t>(OpKind::kNeighborAllgather);
  gathered.dtype = DataType::kFloat64;
  gathered.shape = {1};
  gathered.payload_bytes = sizeof(row);
  gathered.payload = reinterpret_cast<const char*>(&row);
  Write("neighbor_message", "gather_and_goodbye", EncodeNeighborMessage({gathered, goodbye}));
}

void WriteSignatureSeeds() {
  // The other ranks of fuzz_op_signatures, whose own request gathers 2 rows of 3 floats.
  std::vector<OpSignature> others = {
      Signature(OpKind::kAllgather, DataType::kFloat32, {5, 3}, "t"),
      Signature(OpKind::kAllgather, DataType::kFloat32, {0, 3}, "t")};
  auto bytes = [](const std::vector<OpSignature>& s) {
    const char* p = reinterpret_cast<const char*>(s.data());
    return std::vector<char>(p, p + s.size() * sizeof(OpSignature));
  };
  Write("op_signatures", "agreeing", bytes(others));
  others[1] = Signature(OpKind::kAllgather, DataType::kFloat64, {2, 4}, "t");
  Write("op_signatures", "dtype_and_shape_differ", bytes(others));
}

void WriteTopologySeeds() {
  using namespace topology;
  WriteText("topology_json", "ring_6.json", to_json_string(RingGraph(6)));
  WriteText("topology_json", "exponential_8.json", to_json_string(ExponentialTwoGraph(8)));
  WriteText("topology_json", "star_4.json", to_json_string(StarGraph(4)));
  WriteText("topology_json", "unweighted_pairs.json",
            "{\"format\": \"flock-topology\", \"version\": 1, \"size\": 3, \"weighted\": false,\n"
            " \"edges\": [[0, 1], [1, 2], [2, 0, 0.5]]}\n");
}

void WriteConfigSeeds() {
  WriteText("config", "defaults",
            "FLOCK_LOG_LEVEL=warning\nFLOCK_TIMELINE=\nFLOCK_FUSION_THRESHOLD=67108864\n"
            "FLOCK_CACHE_CAPACITY=1024\nFLOCK_CYCLE_TIME_MS=5\nFLOCK_NEIGHBOR_INLINE_BYTES=65536\n"
            "FLOCK_STALL_WARNING_S=60\nFLOCK_STALL_SHUTDOWN_S=0\nFLOCK_MALLOC_TUNING=1\n"
            "FLOCK_QUIET=\nFLOCK_LOCAL_SIZE=0\n");
  WriteText("config", "bluefog_and_glibc",
            "BLUEFOG_NODES_PER_MACHINE=2\nGLIBC_TUNABLES=glibc.malloc.arena_max=2\n"
            "MALLOC_ARENA_MAX=4\nFLOCK_CYCLE_TIME_MS=0.5e1\nFLOCK_STALL_SHUTDOWN_S=2.5\n");
}

}  // namespace
}  // namespace flock

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (tests/fuzz: writes DIR/<target>/ seed files)\n", argv[0]);
    return 2;
  }
  flock::root = argv[1];
  flock::WriteEngineSeeds();
  flock::WriteNeighborSeeds();
  flock::WriteSignatureSeeds();
  flock::WriteTopologySeeds();
  flock::WriteConfigSeeds();
  return 0;
}
