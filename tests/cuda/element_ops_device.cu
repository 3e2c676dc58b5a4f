// Compile check (ctest cuda_element_ops_compile): the element arithmetic the
// CPU kernels use (common/element_ops.h, arith.h, half.h) is legal device
// code, so the CUDA kernels can share it. nvcc compiles this file for one
// architecture; nothing runs.
#include <cstdint>

#include "flock/common/element_ops.h"

namespace flock {
namespace device_check {  // external linkage: nvcc would flag unused kernels

template <typename T>
__global__ void EveryElementOp(T* out, const T* x, typename Arith<T>::Compute* acc, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  using C = typename Arith<T>::Compute;
  T v = element::Reduce(out[i], x[i], element::Sum{});
  v = element::Reduce(v, x[i], element::Min{});
  v = element::Reduce(v, x[i], element::Max{});
  v = element::Reduce(v, x[i], element::Product{});
  v = element::ScaledAdd(C(2), v, C(3), x[i]);
  out[i] = element::Scale(v, C(0.5));
  acc[i] = element::WeightedTerm(C(0.25), x[i]) + element::WeightedPair(C(1), x[i], C(2), v);
}

template <typename T>
__global__ void Floating(T* acc, const T* x, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) acc[i] = element::Blend(acc[i], T(0.5), x[i], T(0.5));
}

__global__ void Narrowing(Float16* h, BFloat16* b, const float* acc, uint8_t* flags, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  h[i] = element::Narrow<Float16>(acc[i]);
  b[i] = element::Narrow<BFloat16>(acc[i]);
  flags[i] = element::ReduceBool(flags[i], 1, i % 2 == 0);
}

template __global__ void EveryElementOp<uint8_t>(uint8_t*, const uint8_t*, uint8_t*, int64_t);
template __global__ void EveryElementOp<int8_t>(int8_t*, const int8_t*, int8_t*, int64_t);
template __global__ void EveryElementOp<int16_t>(int16_t*, const int16_t*, int16_t*, int64_t);
template __global__ void EveryElementOp<int32_t>(int32_t*, const int32_t*, int32_t*, int64_t);
template __global__ void EveryElementOp<int64_t>(int64_t*, const int64_t*, int64_t*, int64_t);
template __global__ void EveryElementOp<Float16>(Float16*, const Float16*, float*, int64_t);
template __global__ void EveryElementOp<BFloat16>(BFloat16*, const BFloat16*, float*, int64_t);
template __global__ void EveryElementOp<float>(float*, const float*, float*, int64_t);
template __global__ void EveryElementOp<double>(double*, const double*, double*, int64_t);
template __global__ void Floating<float>(float*, const float*, int64_t);
template __global__ void Floating<double>(double*, const double*, int64_t);

}  // namespace device_check
}  // namespace flock
