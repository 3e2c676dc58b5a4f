// Arith<T>: element access for the kernels — storage type to compute type and
// back. float16/bfloat16 compute in float and round once when stored.
#pragma once

#include "flock/common/half.h"

namespace flock {

template <typename T>
struct Arith {
  using Compute = T;
  static Compute Load(T v) { return v; }
  static T Store(Compute v) { return v; }
};
template <>
struct Arith<Float16> {
  using Compute = float;
  static float Load(Float16 v) { return ToFloat(v); }
  static Float16 Store(float v) { return ToFloat16(v); }
};
template <>
struct Arith<BFloat16> {
  using Compute = float;
  static float Load(BFloat16 v) { return ToFloat(v); }
  static BFloat16 Store(float v) { return ToBFloat16(v); }
};

}  // namespace flock
