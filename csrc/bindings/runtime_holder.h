// The bindings' single global: the Runtime that init() made, if any.
#pragma once

#include <memory>

#include "flock/runtime/runtime.h"

namespace flock {

std::unique_ptr<Runtime>& RuntimeSlot();

// The runtime, or a NotInitialized error that tells the user what to call.
Runtime& RequireRuntime();

}  // namespace flock
