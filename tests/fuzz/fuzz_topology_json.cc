// fuzz_topology_json: a topology file's text (topology/json_io.h
// from_json_string, the parser behind load_json_file and flock.topology's
// files). A text is either refused with a TopologyError or read into a graph
// that saves and reads back equal; no other exception may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "flock/topology/errors.h"
#include "flock/topology/json_io.h"
#include "fuzz_check.h"

namespace {

bool SameGraph(const flock::topology::Graph& a, const flock::topology::Graph& b) {
  if (a.size() != b.size() || a.is_weighted() != b.is_weighted()) return false;
  const auto ea = a.edges(), eb = b.edges();
  if (ea.size() != eb.size()) return false;
  for (size_t i = 0; i < ea.size(); ++i) {
    if (ea[i].from != eb[i].from || ea[i].to != eb[i].to || ea[i].weight != eb[i].weight)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flock::topology;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Graph graph;
  try {
    graph = from_json_string(text);
  } catch (const TopologyError& e) {
    FLOCK_FUZZ_CHECK(std::string(e.what()).rfind("from_json_string: ", 0) == 0,
                     "a refusal must name the function");
    return 0;
  }
  FLOCK_FUZZ_CHECK(SameGraph(graph, from_json_string(to_json_string(graph))),
                   "a graph read from text must save and read back equal");
  return 0;
}
