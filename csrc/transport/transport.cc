#include "flock/transport/transport.h"

namespace flock {

const char* CommGroupName(CommGroup group) {
  switch (group) {
    case CommGroup::kWorld: return "world";
    case CommGroup::kLocal: return "local";
    case CommGroup::kCross: return "cross";
    case CommGroup::kControl: return "control";
    case CommGroup::kNeighbor: return "neighbor";
  }
  return "?";
}

}  // namespace flock
