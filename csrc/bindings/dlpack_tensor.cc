#include "flock/bindings/dlpack_tensor.h"

#include <dlpack/dlpack.h>

#include "flock/engine/handle_table.h"

namespace py = pybind11;

namespace flock {
namespace {

Result<DataType> ToDataType(const DLDataType& t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 16) return DataType::kFloat16;
    if (t.code == kDLFloat && t.bits == 32) return DataType::kFloat32;
    if (t.code == kDLFloat && t.bits == 64) return DataType::kFloat64;
    if (t.code == kDLBfloat && t.bits == 16) return DataType::kBFloat16;
    if (t.code == kDLInt && t.bits == 8) return DataType::kInt8;
    if (t.code == kDLInt && t.bits == 16) return DataType::kInt16;
    if (t.code == kDLInt && t.bits == 32) return DataType::kInt32;
    if (t.code == kDLInt && t.bits == 64) return DataType::kInt64;
    if (t.code == kDLUInt && t.bits == 8) return DataType::kUInt8;
  }
  static const char* kCodes[] = {"int", "uint", "float", "opaque", "bfloat", "complex"};
  std::string name = t.code < 6 ? kCodes[t.code] : "code" + std::to_string(t.code);
  return Status::Unsupported(
      "dtype " + name + std::to_string(t.bits) +
      " is not supported; flock communicates bool, uint8, int8, int16, int32, "
      "int64, float16, bfloat16, float32 and float64 (convert the tensor)");
}

Result<Device> ToDevice(const DLDevice& d) {
  if (d.device_type == kDLCPU) return Device{DeviceType::kCPU, 0};
  if (d.device_type == kDLCUDA) return Device{DeviceType::kCUDA, d.device_id};
  return Status::Unsupported("tensors on DLPack device type " + std::to_string(d.device_type) +
                             " are not supported; move the tensor to the CPU");
}

bool IsCompact(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return true;  // no elements: strides are meaningless
  }
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

DLDataType ToDlpack(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
    case DataType::kUInt8: return {kDLUInt, 8, 1};
    case DataType::kInt8: return {kDLInt, 8, 1};
    case DataType::kInt16: return {kDLInt, 16, 1};
    case DataType::kInt32: return {kDLInt, 32, 1};
    case DataType::kInt64: return {kDLInt, 64, 1};
    case DataType::kFloat16: return {kDLFloat, 16, 1};
    case DataType::kBFloat16: return {kDLBfloat, 16, 1};
    case DataType::kFloat32: return {kDLFloat, 32, 1};
    case DataType::kFloat64: return {kDLFloat, 64, 1};
  }
  return {kDLUInt, 8, 1};
}

// What an exported capsule owns: the memory's owner, the shape, and the DLPack
// header pointing into both.
struct ExportedTensor {
  DLManagedTensor managed;
  std::shared_ptr<void> owner;
  std::vector<int64_t> shape;
};

}  // namespace

py::capsule ExportCapsule(std::shared_ptr<void> owner, void* data, DataType dtype,
                          std::vector<int64_t> shape, Device device) {
  auto* exported = new ExportedTensor{};
  exported->owner = std::move(owner);
  exported->shape = std::move(shape);
  DLTensor& t = exported->managed.dl_tensor;
  t.data = data;
  t.device =
      device.type == DeviceType::kCUDA ? DLDevice{kDLCUDA, device.index} : DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int32_t>(exported->shape.size());
  t.dtype = ToDlpack(dtype);
  t.shape = exported->shape.data();
  t.strides = nullptr;  // compact row-major
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportedTensor*>(self->manager_ctx);
  };
  // A consumer renames the capsule "used_dltensor" and calls the deleter itself;
  // an unconsumed capsule frees the tensor when it is collected.
  return py::capsule(&exported->managed, "dltensor", [](PyObject* capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor")) return;
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    managed->deleter(managed);
  });
}

py::capsule ToCapsule(std::shared_ptr<GatheredTensor> tensor) {
  void* data = tensor->data();
  const DataType dtype = tensor->dtype;
  const Device device = tensor->device;
  std::vector<int64_t> shape = tensor->shape;
  return ExportCapsule(std::move(tensor), data, dtype, std::move(shape), device);
}

Result<DlpackTensor> DlpackTensor::FromCapsule(py::capsule capsule,
                                               const std::optional<std::string>& dtype_override) {
  if (std::string(capsule.name() ? capsule.name() : "") != "dltensor") {
    return Status::InvalidArgument("expected an unused DLPack capsule named 'dltensor'");
  }
  auto* managed = static_cast<DLManagedTensor*>(capsule.get_pointer());
  // Take ownership: the capsule no longer frees the tensor; we call its deleter.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  DlpackTensor out;
  out.owner_.reset(managed, [](DLManagedTensor* m) {
    // Producers such as numpy drop Python references in their deleter, and the
    // last owner may be a thread without the GIL.
    if (m->deleter == nullptr || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    m->deleter(m);
  });

  const DLTensor& t = managed->dl_tensor;
  if (!IsCompact(t)) {
    return Status::InvalidArgument("tensor is not contiguous; call .contiguous() first");
  }
  Result<Device> device = ToDevice(t.device);
  if (!device.ok()) return device.status();
  Result<DataType> dtype = ToDataType(t.dtype);
  if (!dtype.ok()) return dtype.status();
  out.view_.dtype = dtype.value();
  if (dtype_override) {
    auto parsed = ParseDataType(*dtype_override);
    if (!parsed || DataTypeSize(*parsed) != DataTypeSize(dtype.value())) {
      return Status::Internal("bad dtype override '" + *dtype_override + "'");
    }
    out.view_.dtype = *parsed;
  }
  out.view_.device = device.value();
  out.view_.shape.assign(t.shape, t.shape + t.ndim);
  out.view_.data = static_cast<char*>(t.data) + t.byte_offset;
  return out;
}

}  // namespace flock
