// Bindings of the dynamic schedules of flock_topology (schedule.h, one_peer.h,
// hierarchical_schedules.h) in flock._core.topology.
//
// A schedule answers, for iteration k >= 0 and node r, to whom r sends and from
// whom it receives (sorted lists without r). Python's Bluefog-style generators
// (GetDynamicOnePeerSendRecvRanks, ...) iterate k over these objects.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/topology/consensus.h"
#include "flock/topology/hierarchical_schedules.h"
#include "flock/topology/one_peer.h"
#include "flock/topology/schedule.h"

namespace py = pybind11;

namespace flock {

namespace {

// (iterations, converged, errors) of a run, the errors as a list of floats.
py::tuple RunTuple(const topology::ConsensusRun& run) {
  return py::make_tuple(run.iterations, run.converged, run.errors);
}

void BindConsensus(py::module_& t) {
  using namespace topology;
  t.def("random_start", &random_start, py::arg("size"), py::arg("seed"));
  t.def(
      "run_consensus",
      [](const Graph& g, const Eigen::VectorXd& x0, double eps, std::int64_t max_iterations) {
        ConsensusRun run;
        {
          py::gil_scoped_release release;  // minutes at a million nodes
          run = run_consensus(g, x0, eps, max_iterations);
        }
        return RunTuple(run);
      },
      py::arg("g"), py::arg("x0"), py::arg("eps"), py::arg("max_iterations"));
  t.def(
      "run_schedule_consensus",
      [](const DynamicSchedule& s, const Eigen::VectorXd& x0, double eps,
         std::int64_t max_iterations) {
        return RunTuple(run_consensus(s, x0, eps, max_iterations));
      },
      py::arg("schedule"), py::arg("x0"), py::arg("eps"), py::arg("max_iterations"));
  t.def("period_second_eigenvalue_modulus", &period_second_eigenvalue_modulus, py::arg("schedule"),
        py::arg("period"));
  t.def("predicted_periodic_consensus_iterations", &predicted_periodic_consensus_iterations,
        py::arg("schedule"), py::arg("period"), py::arg("eps"));
}

}  // namespace

void BindTopologySchedules(py::module_& t) {
  using namespace topology;
  py::class_<DynamicSchedule>(t, "DynamicSchedule")
      .def("size", &DynamicSchedule::size)
      .def("send_ranks", &DynamicSchedule::send_ranks, py::arg("k"), py::arg("node"))
      .def("recv_ranks", &DynamicSchedule::recv_ranks, py::arg("k"), py::arg("node"))
      .def(
          "weights",
          [](const DynamicSchedule& s, std::int64_t k, int node) {
            // (self_weight, src_weights, dst_weights): neighbor_allreduce's arguments.
            StepWeights w = s.weights(k, node);
            return py::make_tuple(w.self_weight, w.src_weights, w.dst_weights);
          },
          py::arg("k"), py::arg("node"))
      .def("mixing_graph", &DynamicSchedule::mixing_graph, py::arg("k"));

  py::class_<DynamicOnePeer, DynamicSchedule>(t, "DynamicOnePeer")
      .def(py::init<const Graph&>(), py::arg("topology"))
      .def("turn_list", &DynamicOnePeer::turn_list, py::arg("rank"));

  py::class_<Exp2DynamicMachine, DynamicSchedule>(t, "Exp2DynamicMachine")
      .def(py::init<int, int>(), py::arg("world_size"), py::arg("local_size"))
      .def("machine_of", &Exp2DynamicMachine::machine_of, py::arg("rank"))
      .def("machine_hop", &Exp2DynamicMachine::machine_hop, py::arg("k"));

  py::class_<InnerOuterDynamic, DynamicSchedule>(t, "InnerOuterDynamic")
      .def("num_machines", &InnerOuterDynamic::num_machines)
      .def("local_size", &InnerOuterDynamic::local_size)
      .def("outgoing_local_rank", &InnerOuterDynamic::outgoing_local_rank, py::arg("k"))
      .def("outer_hop", &InnerOuterDynamic::outer_hop, py::arg("k"))
      .def("inner_hop", &InnerOuterDynamic::inner_hop, py::arg("k"));
  py::class_<InnerOuterRingDynamic, InnerOuterDynamic>(t, "InnerOuterRingDynamic")
      .def(py::init<int, int>(), py::arg("world_size"), py::arg("local_size"));
  py::class_<InnerOuterExpo2Dynamic, InnerOuterDynamic>(t, "InnerOuterExpo2Dynamic")
      .def(py::init<int, int>(), py::arg("world_size"), py::arg("local_size"));

  t.def("transpose_rank_lists", &transpose_rank_lists, py::arg("lists"));
  BindConsensus(t);
}

}  // namespace flock
