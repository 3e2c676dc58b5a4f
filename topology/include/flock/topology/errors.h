// Error policy of flock_topology.
//
// Every function of this library that can fail reports the failure by throwing
// flock::topology::TopologyError, a std::invalid_argument. Nothing else is
// thrown on purpose (std::bad_alloc aside). The message always starts with the
// name of the function that refused, then names the problem and the offending
// value, e.g.
//
//   "add_edge(3, 9): node 9 is out of range [0, 8)"
//   "load_json_file(ring.json): edges[4]: negative weight -0.5"
//
// Why exceptions and not Status values: this library is pure computation on
// small objects (graphs, schedules) and has no notion of the runtime's Status
// type. The runtime (csrc/) calls it at a handful of places (set_topology,
// load_topology, dynamic schedules) and converts a TopologyError into its own
// Status there; the Python bindings turn it into ValueError/FlockError.
// Queries that merely answer "no" (is_row_stochastic, has_edge, ...) never throw
// for well-formed arguments.
#pragma once

#include <stdexcept>
#include <string>

namespace flock {
namespace topology {

class TopologyError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace topology
}  // namespace flock
