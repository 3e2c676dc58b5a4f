#include "flock/common/weighted_kernels.h"

#include <cstring>

#include "flock/common/element_ops.h"

namespace flock {
namespace {

template <typename T>
void StoreTyped(void* acc_raw, const void* x_raw, double w, int64_t count) {
  using C = typename Arith<T>::Compute;
  auto* __restrict acc = static_cast<C*>(acc_raw);
  const auto* __restrict x = static_cast<const T*>(x_raw);
  const C cw = static_cast<C>(w);
  for (int64_t i = 0; i < count; ++i) acc[i] = element::WeightedTerm(cw, x[i]);
}

template <typename T>
void PairTyped(void* acc_raw, const void* x_raw, double wx, const void* y_raw, double wy,
               int64_t count) {
  using C = typename Arith<T>::Compute;
  auto* __restrict acc = static_cast<C*>(acc_raw);
  const auto* __restrict x = static_cast<const T*>(x_raw);
  const auto* __restrict y = static_cast<const T*>(y_raw);
  const C cx = static_cast<C>(wx), cy = static_cast<C>(wy);
  for (int64_t i = 0; i < count; ++i) acc[i] = element::WeightedPair(cx, x[i], cy, y[i]);
}

template <typename T>
void BlendTyped(void* acc_raw, double wacc, const void* x_raw, double wx, int64_t count) {
  auto* __restrict acc = static_cast<T*>(acc_raw);
  const auto* __restrict x = static_cast<const T*>(x_raw);
  const T cacc = static_cast<T>(wacc), cx = static_cast<T>(wx);
  for (int64_t i = 0; i < count; ++i) acc[i] = element::Blend(acc[i], cacc, x[i], cx);
}

template <typename T>
void AccumulateTyped(void* acc_raw, const void* x_raw, double w, int64_t count) {
  using C = typename Arith<T>::Compute;
  auto* __restrict acc = static_cast<C*>(acc_raw);
  const auto* __restrict x = static_cast<const T*>(x_raw);
  const C cw = static_cast<C>(w);
  for (int64_t i = 0; i < count; ++i) acc[i] += element::WeightedTerm(cw, x[i]);
}

template <typename T>
void NarrowTyped(void* out_raw, const void* acc_raw, int64_t count) {
  auto* __restrict out = static_cast<T*>(out_raw);
  const auto* __restrict acc = static_cast<const float*>(acc_raw);
  for (int64_t i = 0; i < count; ++i) out[i] = element::Narrow<T>(acc[i]);
}

Status NotFloating(DataType dtype) {
  return Status::Unsupported(std::string("a weighted average needs a floating-point dtype, got ") +
                             DataTypeName(dtype));
}

}  // namespace

DataType AccumulatorType(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ? DataType::kFloat32 : dtype;
}

Status WeightedStore(void* acc, const void* x, DataType dtype, double w, int64_t count) {
  switch (dtype) {
    case DataType::kFloat16: StoreTyped<Float16>(acc, x, w, count); return Status::OK();
    case DataType::kBFloat16: StoreTyped<BFloat16>(acc, x, w, count); return Status::OK();
    case DataType::kFloat32: StoreTyped<float>(acc, x, w, count); return Status::OK();
    case DataType::kFloat64: StoreTyped<double>(acc, x, w, count); return Status::OK();
    default: return NotFloating(dtype);
  }
}

Status WeightedPair(void* acc, const void* x, double wx, const void* y, double wy, DataType dtype,
                    int64_t count) {
  switch (dtype) {
    case DataType::kFloat16: PairTyped<Float16>(acc, x, wx, y, wy, count); return Status::OK();
    case DataType::kBFloat16: PairTyped<BFloat16>(acc, x, wx, y, wy, count); return Status::OK();
    case DataType::kFloat32: PairTyped<float>(acc, x, wx, y, wy, count); return Status::OK();
    case DataType::kFloat64: PairTyped<double>(acc, x, wx, y, wy, count); return Status::OK();
    default: return NotFloating(dtype);
  }
}

Status WeightedBlend(void* acc, double wacc, const void* x, double wx, DataType dtype,
                     int64_t count) {
  switch (dtype) {
    case DataType::kFloat32: BlendTyped<float>(acc, wacc, x, wx, count); return Status::OK();
    case DataType::kFloat64: BlendTyped<double>(acc, wacc, x, wx, count); return Status::OK();
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return Status::Internal(std::string("WeightedBlend needs an accumulator of the dtype itself, "
                                          "not of ") +
                              DataTypeName(dtype));
    default: return NotFloating(dtype);
  }
}

Status WeightedAccumulate(void* acc, const void* x, DataType dtype, double w, int64_t count) {
  switch (dtype) {
    case DataType::kFloat16: AccumulateTyped<Float16>(acc, x, w, count); return Status::OK();
    case DataType::kBFloat16: AccumulateTyped<BFloat16>(acc, x, w, count); return Status::OK();
    case DataType::kFloat32: AccumulateTyped<float>(acc, x, w, count); return Status::OK();
    case DataType::kFloat64: AccumulateTyped<double>(acc, x, w, count); return Status::OK();
    default: return NotFloating(dtype);
  }
}

Status StoreAccumulator(void* out, const void* acc, DataType dtype, int64_t count) {
  switch (dtype) {
    case DataType::kFloat16: NarrowTyped<Float16>(out, acc, count); return Status::OK();
    case DataType::kBFloat16: NarrowTyped<BFloat16>(out, acc, count); return Status::OK();
    case DataType::kFloat32:
    case DataType::kFloat64:
      if (out != acc) std::memcpy(out, acc, static_cast<size_t>(count) * DataTypeSize(dtype));
      return Status::OK();
    default: return NotFloating(dtype);
  }
}

}  // namespace flock
