// Internal helpers shared by the .cc files of flock_topology: building the
// messages of TopologyError (see errors.h) and the argument checks that several
// files need. "where" is always the public function's call as the user wrote
// it, e.g. "add_edge(3, 9)", so each message names the refused call first.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include "flock/topology/errors.h"

namespace flock {
namespace topology {
namespace detail {

// Concatenates the arguments with operator<< (numbers printed with 17
// significant digits so a refused weight is shown exactly).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  out.precision(17);
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw TopologyError(cat(parts...));
}

// The trailing arguments spell "where"; they are formatted only on failure.
template <typename... Where>
void check_node(int node, int size, const Where&... where) {
  if (node < 0 || node >= size) {
    fail(where..., ": node ", node, " is out of range [0, ", size, ")");
  }
}

template <typename... Where>
void check_weight(double weight, const Where&... where) {
  if (!std::isfinite(weight)) fail(where..., ": weight ", weight, " is not finite");
  if (weight < 0.0) fail(where..., ": negative weight ", weight);
}

template <typename... Where>
void check_size(int size, const Where&... where) {
  if (size < 1) fail(where..., ": size must be >= 1, got ", size);
}

}  // namespace detail
}  // namespace topology
}  // namespace flock
