// Bindings of flock_topology: the submodule flock._core.topology, usable
// without init(). It holds the Graph type, Bluefog's generators, the analysis
// functions, the dynamic schedules (topology_schedule_bindings.cc) and topology
// files. python/flock/topology wraps it with Bluefog's names and networkx
// interop; the runtime's stored topologies are bound in
// runtime_topology_bindings.cc.
//
// Vocabulary as in flock/topology/graph.h: W[i][j] is the weight of the edge
// i -> j (what i sends to j); in/out neighbours exclude the node itself.
//
// Errors: a topology::TopologyError (bad size, node out of range, negative or
// non-finite weight, malformed file) becomes flock.errors.
// FlockInvalidArgumentError carrying the same message.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/topology/topology.h"

namespace py = pybind11;

namespace flock {

void BindTopologySchedules(py::module_& t);
void BindRuntimeTopology(py::module_& m);

namespace {

using topology::Graph;
using EdgeTuple = std::tuple<int, int, double>;

void RegisterTopologyErrorTranslator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const topology::TopologyError& e) {
      py::object cls = py::module_::import("flock.errors").attr("FlockInvalidArgumentError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
}

std::vector<EdgeTuple> EdgeTuples(const Graph& g) {
  std::vector<EdgeTuple> edges;
  edges.reserve(g.num_edges());
  for (const topology::Edge& e : g.edges()) edges.emplace_back(e.from, e.to, e.weight);
  return edges;
}

// One call instead of one per edge when Python builds a graph (networkx).
// Sorted first (stably: of repeated edges the last weight still wins), so every
// add_edge appends to its rows instead of inserting amid them.
Graph FromEdges(int size, std::vector<EdgeTuple> edges, bool weighted) {
  std::stable_sort(edges.begin(), edges.end(), [](const EdgeTuple& a, const EdgeTuple& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  Graph g(size, weighted);
  for (const EdgeTuple& e : edges) g.add_edge(std::get<0>(e), std::get<1>(e), std::get<2>(e));
  return g;
}

// A node's edges as Python has always seen them: {other end: weight}.
py::dict EdgeDict(const topology::EdgeRow& row) {
  py::dict edges;
  for (const auto& [node, weight] : row) edges[py::int_(node)] = weight;
  return edges;
}

py::tuple WeightsTuple(const topology::RankWeights& w) {
  return py::make_tuple(w.self_weight, w.neighbor_weights);
}

void BindGraph(py::module_& t) {
  py::class_<Graph>(t, "Graph", "Weighted directed graph; W[i][j] = weight of i -> j.")
      .def(py::init<int, bool>(), py::arg("size"), py::arg("weighted") = false)
      .def("size", &Graph::size)
      .def("is_weighted", &Graph::is_weighted)
      .def("set_weighted", &Graph::set_weighted, py::arg("weighted"))
      .def("add_edge", &Graph::add_edge, py::arg("src"), py::arg("dst"), py::arg("weight") = 1.0)
      .def("remove_edge", &Graph::remove_edge, py::arg("src"), py::arg("dst"))
      .def("has_edge", &Graph::has_edge, py::arg("src"), py::arg("dst"))
      .def("weight", &Graph::weight, py::arg("src"), py::arg("dst"))
      .def("self_weight", &Graph::self_weight, py::arg("node"))
      .def("in_neighbors", &Graph::in_neighbors, py::arg("node"))
      .def("out_neighbors", &Graph::out_neighbors, py::arg("node"))
      .def("in_degree", &Graph::in_degree, py::arg("node"))
      .def("out_degree", &Graph::out_degree, py::arg("node"))
      .def("num_edges", &Graph::num_edges)
      .def("edges", &EdgeTuples, "Every edge as (src, dst, weight), sorted.")
      .def(
          "out_edges", [](const Graph& g, int node) { return EdgeDict(g.out_edges(node)); },
          py::arg("node"))
      .def(
          "in_edges", [](const Graph& g, int node) { return EdgeDict(g.in_edges(node)); },
          py::arg("node"))
      .def("to_dense", &Graph::to_dense)
      .def("copy", [](const Graph& g) { return Graph(g); })
      .def_static("from_dense", &Graph::from_dense, py::arg("w"), py::arg("weighted") = true)
      .def_static("from_edges", &FromEdges, py::arg("size"), py::arg("edges"), py::arg("weighted"))
      .def(py::pickle([](const Graph& g) { return topology::to_json_string(g); },
                      [](const std::string& text) { return topology::from_json_string(text); }));
}

void BindGenerators(py::module_& t) {
  using namespace topology;
  t.def("CirculantGraph", &CirculantGraph, py::arg("size"), py::arg("distances"));
  t.def("ExponentialTwoGraph", &ExponentialTwoGraph, py::arg("size"));
  t.def("ExponentialGraph", &ExponentialGraph, py::arg("size"), py::arg("base") = 2);
  t.def("SymmetricExponentialGraph", &SymmetricExponentialGraph, py::arg("size"),
        py::arg("base") = 4);
  t.def("DefaultMeshShape", &DefaultMeshShape, py::arg("size"));
  t.def("MeshGrid2DGraph", &MeshGrid2DGraph, py::arg("size"),
        py::arg("shape") = std::pair<int, int>{0, 0});
  t.def("StarGraph", &StarGraph, py::arg("size"), py::arg("center_rank") = 0);
  t.def("RingGraph", &RingGraph, py::arg("size"), py::arg("connect_style") = 0);
  t.def("FullyConnectedGraph", &FullyConnectedGraph, py::arg("size"));
}

// The Python spelling of SpectralMethod; ValueError names the choices.
topology::SpectralMethod SpectralMethodNamed(const std::string& name) {
  using topology::SpectralMethod;
  if (name == "auto") return SpectralMethod::kAuto;
  if (name == "dense") return SpectralMethod::kDense;
  if (name == "circulant") return SpectralMethod::kCirculant;
  if (name == "sparse") return SpectralMethod::kSparse;
  throw py::value_error("method must be 'auto', 'dense', 'circulant' or 'sparse', got '" + name +
                        "'");
}

void BindAnalysis(py::module_& t) {
  using namespace topology;
  t.def("is_row_stochastic", &is_row_stochastic, py::arg("g"), py::arg("tol") = kDefaultTolerance);
  t.def("is_column_stochastic", &is_column_stochastic, py::arg("g"),
        py::arg("tol") = kDefaultTolerance);
  t.def("is_doubly_stochastic", &is_doubly_stochastic, py::arg("g"),
        py::arg("tol") = kDefaultTolerance);
  t.def("is_strongly_connected", &is_strongly_connected, py::arg("g"));
  t.def("is_regular", &is_regular, py::arg("g"));
  t.def("is_topology_equivalent", &is_topology_equivalent, py::arg("a"), py::arg("b"),
        py::arg("tol") = kDefaultTolerance);
  t.def(
      "get_recv_weights",
      [](const Graph& g, int rank) { return WeightsTuple(get_recv_weights(g, rank)); },
      py::arg("g"), py::arg("rank"));
  t.def(
      "get_send_weights",
      [](const Graph& g, int rank) { return WeightsTuple(get_send_weights(g, rank)); },
      py::arg("g"), py::arg("rank"));
  t.def(
      "second_largest_eigenvalue_modulus",
      [](const Graph& g, const std::string& method) {
        return second_largest_eigenvalue_modulus(g, SpectralMethodNamed(method));
      },
      py::arg("g"), py::arg("method") = "auto");
  t.def(
      "spectral_gap",
      [](const Graph& g, const std::string& method) {
        return spectral_gap(g, SpectralMethodNamed(method));
      },
      py::arg("g"), py::arg("method") = "auto");
  t.def(
      "predicted_consensus_iterations",
      [](const Graph& g, double eps, const std::string& method) {
        return predicted_consensus_iterations(g, eps, SpectralMethodNamed(method));
      },
      py::arg("g"), py::arg("eps"), py::arg("method") = "auto");
}

void BindFiles(py::module_& t) {
  using namespace topology;
  t.def("to_json_string", &to_json_string, py::arg("g"));
  t.def("from_json_string", &from_json_string, py::arg("text"));
  t.def("save_json_file", &save_json_file, py::arg("g"), py::arg("path"));
  t.def("load_json_file", &load_json_file, py::arg("path"));
}

}  // namespace

void BindTopology(py::module_& m) {
  RegisterTopologyErrorTranslator();
  py::module_ t = m.def_submodule("topology", "flock_topology: graphs, generators, schedules");
  BindGraph(t);
  BindGenerators(t);
  BindAnalysis(t);
  BindFiles(t);
  BindTopologySchedules(t);
  BindRuntimeTopology(m);
}

}  // namespace flock
