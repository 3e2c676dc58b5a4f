// The smallest flock C++ program: every rank contributes its rank number and
// prints the average. Run: mpirun -np 4 build/examples/cpp/allreduce_example
#include <cstdio>

#include "flock/runtime/collectives.h"
#include "flock/runtime/runtime.h"
#include "flock/transport/registry.h"

int main() {
  auto config = flock::Config::FromEnvironment();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 2;
  }
  auto runtime = flock::Runtime::Create(config.value());
  if (!runtime.ok()) {
    std::fprintf(stderr, "%s\n", runtime.status().ToString().c_str());
    return 1;
  }
  flock::Runtime& rt = *runtime.value();
  float values[4] = {1.0f * rt.rank(), 2.0f, 3.0f, 4.0f};
  flock::TensorView view{values, flock::DataType::kFloat32, {4}};
  flock::Status status = flock::Allreduce(rt, view, view, {flock::ReduceOp::kAverage});
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("rank %d of %d: average of ranks = %g\n", rt.rank(), rt.size(), values[0]);
  runtime.value().reset();
  flock::FinalizeTransports();
  return 0;
}
