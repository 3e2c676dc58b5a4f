// The fake-device test build's kernels: device_kernels.cu compiled as C++,
// where launch.h runs each kernel body on the host, queued on its stream.
// (A source file has one language per directory in CMake, hence this file.)
#include "device_kernels.cu"  // NOLINT(bugprone-suspicious-include)
