// Allreduces each rank's number through an installed flock and checks the sum.
#include <cstdio>

#include "ops/collectives.h"
#include "runtime/runtime.h"
#include "transport/registry.h"

int main() {
  auto config = flock::Config::FromEnvironment();
  auto runtime = flock::Runtime::Create(config.value());
  if (!runtime.ok()) return 1;
  flock::Runtime& rt = *runtime.value();
  double x = rt.rank() + 1.0;
  flock::TensorView view{&x, flock::DataType::kFloat64, {}};
  flock::Status status = flock::Allreduce(rt.transport(), view, view,
                                          {flock::ReduceOp::kSum, flock::CommGroup::kWorld, "x"});
  const double expected = rt.size() * (rt.size() + 1) / 2.0;
  const bool ok = status.ok() && x == expected;
  std::printf("consumer rank %d: sum %g (expected %g) %s\n", rt.rank(), x, expected,
              ok ? "ok" : status.ToString().c_str());
  runtime.value().reset();
  flock::FinalizeTransports();
  return ok ? 0 : 1;
}
