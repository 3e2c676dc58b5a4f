// DlpackTensor: a tensor received from Python through a DLPack capsule.
//
// Taking the capsule consumes it (renamed "used_dltensor", as the protocol
// asks) and makes this object the owner of the DLManagedTensor: the producer's
// tensor (torch or numpy) stays alive until the last copy of this object is
// destroyed, however long an asynchronous op keeps it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/status.h"
#include "flock/common/tensor_view.h"

struct DLManagedTensor;

namespace flock {

class DlpackTensor {
 public:
  // dtype_override reinterprets the elements (Python passes torch.bool as
  // uint8 storage with override "bool", since DLPack 0.6 has no bool).
  static Result<DlpackTensor> FromCapsule(pybind11::capsule capsule,
                                          const std::optional<std::string>& dtype_override);

  const TensorView& view() const { return view_; }

 private:
  std::shared_ptr<DLManagedTensor> owner_;
  TensorView view_;
};

struct GatheredTensor;

// A DLPack capsule of `data` (compact row-major `shape` of `dtype`, on
// `device`) that keeps `owner` alive until the consumer (torch, numpy) frees
// the tensor.
pybind11::capsule ExportCapsule(std::shared_ptr<void> owner, void* data, DataType dtype,
                                std::vector<int64_t> shape, Device device = {});

// A DLPack capsule that owns `tensor` (engine-allocated output). bool travels
// as uint8, like inputs do.
pybind11::capsule ToCapsule(std::shared_ptr<GatheredTensor> tensor);

}  // namespace flock
