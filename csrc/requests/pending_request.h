// PendingRequest: one submitted op as the engine's loop holds it, and the
// identifiers and results that go with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/requests/op_signature.h"

namespace flock {

using HandleId = int64_t;

// An output the engine allocated (allgather: its size is known only then).
struct GatheredTensor {
  std::vector<char> bytes;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
};

struct PendingRequest {
  HandleId handle = 0;
  OpRequest op;       // kind, name, input, reduction, root, group, local rejection
  TensorView output;  // where the result goes (may be the input); unused by allgathers
  std::chrono::steady_clock::time_point submitted;
};

}  // namespace flock
