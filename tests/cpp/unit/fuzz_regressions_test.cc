// Every input the fuzzers once crashed on (tests/fuzz/<target>/regressions),
// replayed through its decoder in the normal build: each must now be refused
// with a message. The readable version of each case sits with its decoder's
// tests (engine_pure_test, neighbor_wire_test, op_signature_test, config_test,
// topology's json_io_test); this keeps the exact bytes checked without clang.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flock/collectives/collectives.h"
#include "flock/common/config.h"
#include "flock/engine/wire.h"
#include "flock/neighbor/neighbor_wire.h"
#include "flock/requests/op_signature.h"
#include "flock/topology/errors.h"
#include "flock/topology/json_io.h"

namespace flock {
namespace {

namespace fs = std::filesystem;

std::vector<char> ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(file), {});
}

// What each target's decoder says about one input: OK, or why it refuses it.
Status Decode(const std::string& target, const std::vector<char>& bytes) {
  if (target == "engine_ready") return DecodeReady(bytes).status();
  if (target ==
      "engine_responses") {  // then the executor's layout, as fuzz_engine_responses has it
    FLOCK_ASSIGN_OR_RETURN(const std::vector<Response> responses, DecodeResponses(bytes));
    for (const Response& r : responses) {
      if (r.type == ResponseType::kExecute && r.kind == OpKind::kAllgather)
        FLOCK_RETURN_IF_ERROR(PlanGather(DataType::kFloat32, {1, 3}, r.first_dims).status());
    }
    return Status::OK();
  }
  if (target == "neighbor_message")
    return DecodeNeighborMessage(std::make_shared<const std::vector<char>>(bytes)).status();
  if (target == "op_signatures") {  // the other ranks' records, as AgreeOnRequest checks them
    for (size_t at = 0; at + sizeof(OpSignature) <= bytes.size(); at += sizeof(OpSignature)) {
      OpSignature signature;
      std::memcpy(&signature, bytes.data() + at, sizeof(signature));
      FLOCK_RETURN_IF_ERROR(CheckSignature(signature));
    }
    return Status::OK();
  }
  if (target == "config") {  // lines NAME=value, as fuzz_config reads them
    std::map<std::string, std::string> variables;
    std::string line;
    std::vector<char> lines = bytes;
    lines.push_back('\n');
    for (char c : lines) {
      if (c != '\n') {
        line += c;
        continue;
      }
      const size_t equals = line.find('=');
      if (equals != std::string::npos) variables[line.substr(0, equals)] = line.substr(equals + 1);
      line.clear();
    }
    return Config::FromMap(variables).status();
  }
  try {
    topology::from_json_string(std::string(bytes.begin(), bytes.end()));
  } catch (const topology::TopologyError& e) {
    return Status::InvalidArgument(e.what());
  }
  return Status::OK();
}

TEST(FuzzRegressions, EveryCrashInputIsRefusedWithAMessage) {
  int replayed = 0;
  for (const auto& target : fs::directory_iterator(FLOCK_FUZZ_DIR)) {
    const fs::path regressions = target.path() / "regressions";
    if (!fs::is_directory(regressions)) continue;
    for (const auto& input : fs::directory_iterator(regressions)) {
      const std::string name = target.path().filename().string();
      const Status status = Decode(name, ReadFile(input.path()));
      EXPECT_FALSE(status.ok()) << name << "/" << input.path().filename().string();
      EXPECT_FALSE(status.message().empty()) << input.path();
      ++replayed;
    }
  }
  EXPECT_GE(replayed, 20);
}

}  // namespace
}  // namespace flock
