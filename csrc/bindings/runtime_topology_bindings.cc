// Bindings of the topologies stored in the Runtime (they need init()): the
// rank topology of set_topology and the machine topology of
// set_machine_topology.
//
// These functions only store and read. Checking a new topology, and that every
// rank passes the same one, is collective and lives in Python
// (flock/_topology_runtime.py), which calls install_* once all ranks agreed.
// Readers get copies (Python may mutate what it holds); the neighbour lists are
// answered in C++ without copying the graph.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"
#include "flock/topology/graph.h"

namespace py = pybind11;

namespace flock {
namespace {

using topology::Graph;
using GraphPtr = std::shared_ptr<const Graph>;

std::shared_ptr<const Graph> Checked(const char* what, const Graph& g, int nodes,
                                     const char* size_name) {
  if (g.size() != nodes) {
    throw StatusError(Status::InvalidArgument(std::string(what) + ": the topology has " +
                                              std::to_string(g.size()) + " nodes but " + size_name +
                                              " is " + std::to_string(nodes)));
  }
  return std::make_shared<const Graph>(g);
}

std::optional<Graph> CopyOf(const GraphPtr& g) {
  if (!g) return std::nullopt;
  return *g;
}

// in (or out) neighbours of `node` in `g`, or none when no topology is set.
std::vector<int> Neighbors(const GraphPtr& g, int node, bool in) {
  if (!g) return {};
  return in ? g->in_neighbors(node) : g->out_neighbors(node);
}

}  // namespace

void BindRuntimeTopology(py::module_& m) {
  m.def(
      "install_topology",
      [](const Graph& g) {
        Runtime& runtime = RequireRuntime();
        runtime.set_topology(Checked("set_topology", g, runtime.size(), "size()"));
      },
      py::arg("graph"), "Stores the rank topology (after the collective checks).");
  m.def(
      "install_machine_topology",
      [](const Graph& g) {
        Runtime& runtime = RequireRuntime();
        const int machines = runtime.machine().machine_size;
        runtime.set_machine_topology(
            Checked("set_machine_topology", g, machines, "machine_size()"));
      },
      py::arg("graph"), "Stores the machine topology (after the collective checks).");
  m.def("topology_graph", [] { return CopyOf(RequireRuntime().topology()); });
  m.def("machine_topology_graph", [] { return CopyOf(RequireRuntime().machine_topology()); });

  m.def("in_neighbor_ranks", [] {
    Runtime& runtime = RequireRuntime();
    return Neighbors(runtime.topology(), runtime.rank(), /*in=*/true);
  });
  m.def("out_neighbor_ranks", [] {
    Runtime& runtime = RequireRuntime();
    return Neighbors(runtime.topology(), runtime.rank(), /*in=*/false);
  });
  m.def("in_neighbor_machine_ranks", [] {
    Runtime& runtime = RequireRuntime();
    return Neighbors(runtime.machine_topology(), runtime.machine().machine_rank, /*in=*/true);
  });
  m.def("out_neighbor_machine_ranks", [] {
    Runtime& runtime = RequireRuntime();
    return Neighbors(runtime.machine_topology(), runtime.machine().machine_rank, /*in=*/false);
  });
}

}  // namespace flock
