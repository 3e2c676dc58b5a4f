// Arith<T>: element access for the kernels — storage type to compute type and
// back. float16/bfloat16 compute in float and round once when stored.
#pragma once

#include "flock/common/half.h"
#include "flock/common/hd.h"

namespace flock {

template <typename T>
struct Arith {
  using Compute = T;
  FLOCK_HD static Compute Load(T v) { return v; }
  FLOCK_HD static T Store(Compute v) { return v; }
};
template <>
struct Arith<Float16> {
  using Compute = float;
  FLOCK_HD static float Load(Float16 v) { return ToFloat(v); }
  FLOCK_HD static Float16 Store(float v) { return ToFloat16(v); }
};
template <>
struct Arith<BFloat16> {
  using Compute = float;
  FLOCK_HD static float Load(BFloat16 v) { return ToFloat(v); }
  FLOCK_HD static BFloat16 Store(float v) { return ToBFloat16(v); }
};

}  // namespace flock
