// flock._core: the Python extension module. Python-facing wrappers live in
// python/flock; this module only converts arguments and errors.
#include <pybind11/pybind11.h>

#include "flock/bindings/python_errors.h"

namespace flock {
void BindBasics(pybind11::module_& m);
void BindCollectives(pybind11::module_& m);
void BindNeighborOps(pybind11::module_& m);
void BindOutputPool(pybind11::module_& m);
void BindTopology(pybind11::module_& m);
void BindWindows(pybind11::module_& m);
}  // namespace flock

PYBIND11_MODULE(_core, m) {
  m.doc() = "flock core: MPI transport and collectives (use flock.torch or flock.numpy)";
  flock::RegisterErrorTranslator(m);
  flock::BindBasics(m);
  flock::BindCollectives(m);
  flock::BindNeighborOps(m);
  flock::BindOutputPool(m);
  flock::BindTopology(m);
  flock::BindWindows(m);
}
