// PendingRequest: one submitted op as the engine's loop holds it.
#pragma once

#include <chrono>

#include "flock/engine/handle_table.h"
#include "flock/ops/op_signature.h"

namespace flock {

struct PendingRequest {
  HandleId handle = 0;
  OpRequest op;       // kind, name, input, reduction, root, group, local rejection
  TensorView output;  // where the result goes (may be the input); unused by allgathers
  std::chrono::steady_clock::time_point submitted;
};

}  // namespace flock
