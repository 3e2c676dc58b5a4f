// Output tensors of out-of-place ops in reused memory (common/buffer_pool.h):
// a fresh allocation per call is fresh pages from the kernel, and the op's
// first write to each page faults — about 3 ms per MiB on this kind of VM,
// more than the communication itself. Python asks for large outputs here; the
// tensor it gets gives its memory back to the pool when it is freed.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flock/bindings/dlpack_tensor.h"
#include "flock/bindings/python_errors.h"
#include "flock/bindings/runtime_holder.h"
#include "flock/common/buffer_pool.h"

namespace py = pybind11;

namespace flock {
namespace {

// Lives as long as the process: tensors may outlive init/shutdown cycles.
BufferPool& OutputPool() {
  static BufferPool* pool = new BufferPool(size_t{1} << 30);
  return *pool;
}

}  // namespace

void BindOutputPool(py::module_& m) {
  m.def(
      "pooled_empty",
      [](const std::vector<int64_t>& shape, const std::string& dtype_name) {
        auto dtype = ParseDataType(dtype_name);
        if (!dtype) ThrowIfError(Status::InvalidArgument("unknown dtype '" + dtype_name + "'"));
        int64_t count = 1;
        for (int64_t d : shape) count *= d;
        auto buffer = std::make_shared<PooledBuffer>(
            OutputPool().Acquire(static_cast<size_t>(count) * DataTypeSize(*dtype)));
        void* data = buffer->data();
        return ExportCapsule(std::move(buffer), data, *dtype, shape);
      },
      py::arg("shape"), py::arg("dtype"),
      "A DLPack capsule of an uninitialized tensor whose memory comes from (and returns to) "
      "flock's output pool.");
  m.def("output_pool_free_bytes", [] { return OutputPool().free_bytes(); });
  m.def(
      "release_idle_buffers",
      [] {
        size_t freed = OutputPool().FreeIdle();
        if (RuntimeSlot() != nullptr) freed += RuntimeSlot()->engine().scratch_pool().FreeIdle();
        return freed;
      },
      "Frees the idle buffers flock keeps for reuse (output and scratch pools), which it "
      "otherwise frees after 10 s unused; returns the bytes freed. For measurements of "
      "resident memory.");
}

}  // namespace flock
