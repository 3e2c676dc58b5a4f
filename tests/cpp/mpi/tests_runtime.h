// The runtime shared by every MPI test of one process (made in main).
#pragma once

#include <memory>

#include "flock/runtime/runtime.h"
#include "flock/transport/registry.h"

namespace flock::testing {

std::unique_ptr<Runtime>& SharedRuntime();

inline Transport& World() {
  return SharedRuntime()->transport();
}

}  // namespace flock::testing
