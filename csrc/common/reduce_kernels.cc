#include "flock/common/reduce_kernels.h"

#include "flock/common/element_ops.h"

namespace flock {
namespace {

template <typename T, typename Op>
void CombineLoop(T* __restrict inout, const T* __restrict in, int64_t count, Op op) {
  for (int64_t i = 0; i < count; ++i) inout[i] = element::Reduce(inout[i], in[i], op);
}

template <typename T>
void ReduceTyped(void* inout_raw, const void* in_raw, int64_t count, ReduceOp op) {
  auto* inout = static_cast<T*>(inout_raw);
  const auto* in = static_cast<const T*>(in_raw);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: CombineLoop(inout, in, count, element::Sum{}); break;
    case ReduceOp::kMin: CombineLoop(inout, in, count, element::Min{}); break;
    case ReduceOp::kMax: CombineLoop(inout, in, count, element::Max{}); break;
    case ReduceOp::kProduct: CombineLoop(inout, in, count, element::Product{}); break;
  }
}

void ReduceBool(uint8_t* __restrict inout, const uint8_t* __restrict in, int64_t count,
                ReduceOp op) {
  // The choice outside the loop: each loop vectorizes.
  if (op == ReduceOp::kSum || op == ReduceOp::kMax) {
    for (int64_t i = 0; i < count; ++i) inout[i] = element::ReduceBool(inout[i], in[i], true);
  } else {
    for (int64_t i = 0; i < count; ++i) inout[i] = element::ReduceBool(inout[i], in[i], false);
  }
}

template <typename T>
void ScaledAddTyped(void* out_raw, double a, const void* x_raw, double b, const void* y_raw,
                    int64_t count) {
  using A = Arith<T>;
  using C = typename A::Compute;
  // No __restrict: out may alias x or y, which is safe for this one-pass loop.
  auto* out = static_cast<T*>(out_raw);
  const auto* x = static_cast<const T*>(x_raw);
  const auto* y = static_cast<const T*>(y_raw);
  const C ca = static_cast<C>(a);
  const C cb = static_cast<C>(b);
  for (int64_t i = 0; i < count; ++i) out[i] = element::ScaledAdd(ca, x[i], cb, y[i]);
}

template <typename T>
void ScaleTyped(void* buffer_raw, int64_t count, double factor) {
  using A = Arith<T>;
  using C = typename A::Compute;
  auto* buffer = static_cast<T*>(buffer_raw);
  const C f = static_cast<C>(factor);
  for (int64_t i = 0; i < count; ++i) buffer[i] = element::Scale(buffer[i], f);
}

Status NotFloating(const char* what, DataType dtype) {
  return Status::Unsupported(std::string(what) + " needs a floating-point dtype, got " +
                             DataTypeName(dtype));
}

}  // namespace

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAverage: return "average";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "product";
  }
  return "?";
}

Status CheckReduceSupported(DataType dtype, ReduceOp op) {
  if (op == ReduceOp::kAverage && !IsFloatingPoint(dtype)) {
    return Status::Unsupported(std::string("average is defined for floating-point tensors only, "
                                           "got ") +
                               DataTypeName(dtype) +
                               "; use op=sum and divide as your integer semantics require");
  }
  return Status::OK();
}

Status ReduceInto(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op) {
  FLOCK_RETURN_IF_ERROR(CheckReduceSupported(dtype, op));
  switch (dtype) {
    case DataType::kBool:
      ReduceBool(static_cast<uint8_t*>(inout), static_cast<const uint8_t*>(in), count, op);
      break;
    case DataType::kUInt8: ReduceTyped<uint8_t>(inout, in, count, op); break;
    case DataType::kInt8: ReduceTyped<int8_t>(inout, in, count, op); break;
    case DataType::kInt16: ReduceTyped<int16_t>(inout, in, count, op); break;
    case DataType::kInt32: ReduceTyped<int32_t>(inout, in, count, op); break;
    case DataType::kInt64: ReduceTyped<int64_t>(inout, in, count, op); break;
    case DataType::kFloat16: ReduceTyped<Float16>(inout, in, count, op); break;
    case DataType::kBFloat16: ReduceTyped<BFloat16>(inout, in, count, op); break;
    case DataType::kFloat32: ReduceTyped<float>(inout, in, count, op); break;
    case DataType::kFloat64: ReduceTyped<double>(inout, in, count, op); break;
  }
  return Status::OK();
}

Status ScaleInPlace(void* buffer, int64_t count, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kFloat16: ScaleTyped<Float16>(buffer, count, factor); return Status::OK();
    case DataType::kBFloat16: ScaleTyped<BFloat16>(buffer, count, factor); return Status::OK();
    case DataType::kFloat32: ScaleTyped<float>(buffer, count, factor); return Status::OK();
    case DataType::kFloat64: ScaleTyped<double>(buffer, count, factor); return Status::OK();
    default: return NotFloating("scaling", dtype);
  }
}

Status ScaledAdd(void* out, double a, const void* x, double b, const void* y, int64_t count,
                 DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: ScaledAddTyped<Float16>(out, a, x, b, y, count); return Status::OK();
    case DataType::kBFloat16: ScaledAddTyped<BFloat16>(out, a, x, b, y, count); return Status::OK();
    case DataType::kFloat32: ScaledAddTyped<float>(out, a, x, b, y, count); return Status::OK();
    case DataType::kFloat64: ScaledAddTyped<double>(out, a, x, b, y, count); return Status::OK();
    default: return NotFloating("scaled add", dtype);
  }
}

}  // namespace flock
