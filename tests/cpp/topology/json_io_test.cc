// Topology files: round trips (bit-identical weights, flag, zero-weight edges),
// the shipped example files, and every loader error naming its problem.
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "flock/topology/analysis.h"
#include "flock/topology/errors.h"
#include "flock/topology/generators.h"
#include "flock/topology/json_io.h"

namespace flock {
namespace topology {
namespace {

std::string error_of(const std::string& text) {
  try {
    from_json_string(text);
  } catch (const TopologyError& e) {
    return e.what();
  }
  return "(no error)";
}

// A valid document with `edges` and optional replacement header fields.
std::string doc(const std::string& edges, const std::string& size = "3",
                const std::string& extra = "") {
  return R"({"format": "flock-topology", "version": 1, "size": )" + size +
         R"(, "weighted": true, )" + extra + R"("edges": )" + edges + "}";
}

TEST(JsonIo, RoundTripIsExact) {
  for (int n = 1; n <= 9; ++n) {
    for (const Graph& g : {ExponentialGraph(n, 3), MeshGrid2DGraph(n), StarGraph(n, n - 1),
                           RingGraph(n), SymmetricExponentialGraph(n)}) {
      const Graph back = from_json_string(to_json_string(g));
      EXPECT_TRUE(is_topology_equivalent(g, back, 0.0)) << n;
      EXPECT_TRUE(back.is_weighted());
    }
  }
}

TEST(JsonIo, FlagAndZeroWeightEdgesSurvive) {
  Graph g(3);
  g.add_edge(0, 1, 0.0);
  g.add_edge(2, 2, 0.1);
  const Graph back = from_json_string(to_json_string(g));
  EXPECT_FALSE(back.is_weighted());
  EXPECT_TRUE(back.has_edge(0, 1));
  EXPECT_EQ(back.weight(2, 2), 0.1);
  EXPECT_EQ(back.num_edges(), 2u);
  EXPECT_EQ(from_json_string(to_json_string(Graph(2))).num_edges(), 0u);
}

TEST(JsonIo, LayoutIsOneEdgePerLine) {
  const std::string text = to_json_string(RingGraph(2));
  EXPECT_EQ(text,
            "{\n  \"format\": \"flock-topology\",\n  \"version\": 1,\n  \"size\": 2,\n"
            "  \"weighted\": true,\n  \"edges\": [\n    [0,0,0.5],\n    [0,1,0.5],\n"
            "    [1,0,0.5],\n    [1,1,0.5]\n  ]\n}\n");
}

TEST(JsonIo, TwoElementEdgesMeanWeightOne) {
  const Graph g = from_json_string(doc("[[0, 1], [1, 2, 0.5]]"));
  EXPECT_EQ(g.weight(0, 1), 1.0);
  EXPECT_EQ(g.weight(1, 2), 0.5);
}

TEST(JsonIo, FileRoundTrip) {
  const std::string path = ::testing::TempDir() + "flock_topology_roundtrip.json";
  save_json_file(MeshGrid2DGraph(12), path);
  EXPECT_TRUE(is_topology_equivalent(load_json_file(path), MeshGrid2DGraph(12), 0.0));
  std::remove(path.c_str());
}

TEST(JsonIo, ShippedExamplesMatchGenerators) {
  const std::string dir = FLOCK_TOPOLOGY_DATA_DIR;
  EXPECT_TRUE(
      is_topology_equivalent(load_json_file(dir + "/exponential_8.json"), ExponentialGraph(8)));
  EXPECT_TRUE(is_topology_equivalent(load_json_file(dir + "/ring_6.json"), RingGraph(6)));
  EXPECT_TRUE(is_topology_equivalent(load_json_file(dir + "/mesh_grid_3x4.json"),
                                     MeshGrid2DGraph(12, {3, 4})));
}

TEST(JsonIo, FileErrorsNameThePath) {
  const std::string missing = ::testing::TempDir() + "no_such_topology.json";
  try {
    load_json_file(missing);
    FAIL() << "no throw";
  } catch (const TopologyError& e) {
    EXPECT_EQ(std::string(e.what()), "load_json_file(" + missing + "): cannot open the file");
  }
  const std::string bad = ::testing::TempDir() + "flock_bad_topology.json";
  std::ofstream(bad) << doc("[[0, 5, 1.0]]");
  try {
    load_json_file(bad);
    FAIL() << "no throw";
  } catch (const TopologyError& e) {
    EXPECT_EQ(std::string(e.what()),
              "load_json_file(" + bad + "): edges[0]: node 5 is out of range [0, 3)");
  }
  std::remove(bad.c_str());
  EXPECT_THROW(save_json_file(RingGraph(3), "/nonexistent-dir/x.json"), TopologyError);
}

TEST(JsonIo, ErrorsNameTheProblem) {
  const auto has = [](const std::string& text, const std::string& part) {
    const std::string message = error_of(text);
    EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
  };
  has("{\"format\": ", "from_json_string: not valid JSON (byte ");
  has("[1, 2]", "the top level must be a JSON object");
  has(R"({"version": 1, "size": 2, "weighted": true, "edges": []})", "missing key \"format\"");
  has(R"({"format": "flock-topology", "size": 2, "weighted": true, "edges": []})",
      "missing key \"version\"");
  has(R"({"format": "flock-topology", "version": 1, "weighted": true, "edges": []})",
      "missing key \"size\"");
  has(R"({"format": "flock-topology", "version": 1, "size": 2, "edges": []})",
      "missing key \"weighted\"");
  has(R"({"format": "flock-topology", "version": 1, "size": 2, "weighted": true})",
      "missing key \"edges\"");
  has(R"({"format": "networkx", "version": 1, "size": 2, "weighted": true, "edges": []})",
      "format is \"networkx\", expected \"flock-topology\"");
  has(R"({"format": "flock-topology", "version": 2, "size": 2, "weighted": true, "edges": []})",
      "unsupported version 2");
  has(doc("[]", "\"3\""), "key \"size\" must be an integer, got string");
  has(doc("[]", "2.5"), "key \"size\" must be an integer, got number");
  has(doc("[]", "0"), "size must be >= 1, got 0");
  has(doc("{}"), "key \"edges\" must be an array, got object");
  has(doc("[[0]]"), "edges[0]: expected [from, to, weight], got [0]");
  has(doc("[[0, 1, 0.5], [0, 1, 2, 3]]"), "edges[1]: expected [from, to, weight]");
  has(doc("[[\"0\", 1, 1]]"), "edges[0]: nodes must be integers");
  has(doc("[[0, 1, \"heavy\"]]"), "edges[0]: weight must be a number");
  has(doc("[[0, 3, 1]]"), "edges[0]: node 3 is out of range [0, 3)");
  has(doc("[[-1, 0, 1]]"), "edges[0]: node -1 is out of range [0, 3)");
  has(doc("[[0, 1, -0.25]]"), "edges[0]: negative weight -0.25");
  has(doc("[[0, 1, 0.5], [2, 2, 1], [0, 1, 0.5]]"), "edges[2]: edge [0, 1] is listed twice");
  has(R"({"format": "flock-topology", "version": 1, "size": 2, "weighted": 1, "edges": []})",
      "key \"weighted\" must be true or false");
}

// Found by fuzzing (tests/fuzz/topology_json/regressions holds the inputs).
TEST(JsonIo, HostileFilesAreRefusedWithATopologyError) {
  // A number no double holds: once nlohmann's out_of_range escaped the error policy.
  EXPECT_NE(error_of(doc("[[0, 1, 2E444]]")).find("not readable JSON"), std::string::npos);
  EXPECT_NE(error_of("2E444").find("from_json_string: "), std::string::npos);
  // 90 bytes asking for 2^30 nodes: once Graph tried to allocate 48 GB.
  EXPECT_NE(
      error_of(doc("[]", "1073741824")).find("size 1073741824 is too large (at most 1048576)"),
      std::string::npos);
  // A deeply nested entry: once its message was built by recursing once per level.
  const int depth = 300000;
  const std::string nested = std::string(depth, '[') + std::string(depth, ']');
  EXPECT_NE(error_of(doc("[" + nested + "]"))
                .find("edges[0]: expected [from, to, weight], got "
                      "array of 1 elements"),
            std::string::npos);
}

TEST(JsonIo, UnknownKeysAreIgnored) {
  const Graph g = from_json_string(doc("[[0, 1, 0.5]]", "3", R"("comment": "hand made", )"));
  EXPECT_EQ(g.size(), 3);
}

}  // namespace
}  // namespace topology
}  // namespace flock
