// Allreduces each rank's number through an installed flock and checks the sum.
#include <cstdio>

#include <flock/runtime/collectives.h>
#include <flock/runtime/runtime.h>
#include <flock/topology/generators.h>
#include <flock/transport/registry.h>

int main() {
  auto config = flock::Config::FromEnvironment();
  auto runtime = flock::Runtime::Create(config.value());
  if (!runtime.ok()) return 1;
  flock::Runtime& rt = *runtime.value();
  double x = rt.rank() + 1.0;
  flock::TensorView view{&x, flock::DataType::kFloat64, {}};
  flock::Status status =
      flock::Allreduce(rt, view, view, {flock::ReduceOp::kSum, flock::CommGroup::kWorld, "x"});
  const double expected = rt.size() * (rt.size() + 1) / 2.0;
  // The topology library comes with the package too: rank r's in-degree in the
  // exponential graph is the number of powers of two below size.
  const auto graph = flock::topology::ExponentialGraph(rt.size());
  int powers = 0;
  for (int d = 1; d < rt.size(); d *= 2) ++powers;
  const bool topology_ok = static_cast<int>(graph.in_neighbors(rt.rank()).size()) == powers;
  const bool ok = status.ok() && x == expected && topology_ok;
  std::printf("consumer rank %d: sum %g (expected %g) %s\n", rt.rank(), x, expected,
              ok ? "ok" : status.ToString().c_str());
  runtime.value().reset();
  flock::FinalizeTransports();
  return ok ? 0 : 1;
}
