// Bindings of the dynamic schedules of flock_topology (schedule.h, one_peer.h,
// hierarchical_schedules.h) in flock._core.topology.
//
// A schedule answers, for iteration k >= 0 and node r, to whom r sends and from
// whom it receives (sorted lists without r). Python's Bluefog-style generators
// (GetDynamicOnePeerSendRecvRanks, ...) iterate k over these objects.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/topology/hierarchical_schedules.h"
#include "flock/topology/one_peer.h"
#include "flock/topology/schedule.h"

namespace py = pybind11;

namespace flock {

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
}

}  // namespace flock
