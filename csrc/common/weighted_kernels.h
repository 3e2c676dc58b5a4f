// Kernels for weighted averages (neighbor ops): out = w0·x0 + Σ wj·xj built up
// one contribution at a time, in an *accumulator* of AccumulatorType(dtype) —
// float32 for float16/bfloat16 (so rounding happens once, at the end), the
// dtype itself otherwise. Floating dtypes only.
#pragma once

#include <cstdint>

#include "flock/common/data_type.h"
#include "flock/common/status.h"

namespace flock {

DataType AccumulatorType(DataType dtype);

// acc[i] = w * x[i]; `x` holds `dtype` elements, `acc` AccumulatorType(dtype) ones.
Status WeightedStore(void* acc, const void* x, DataType dtype, double w, int64_t count);

// acc[i] = wx * x[i] + wy * y[i]: the store and the first contribution in one pass.
Status WeightedPair(void* acc, const void* x, double wx, const void* y, double wy, DataType dtype,
                    int64_t count);

// acc[i] = wx * x[i] + wacc * acc[i], for dtypes that are their own accumulator type
// (float32, float64): a contribution that landed in the accumulator itself, then the store.
Status WeightedBlend(void* acc, double wacc, const void* x, double wx, DataType dtype,
                     int64_t count);

// acc[i] += w * x[i].
Status WeightedAccumulate(void* acc, const void* x, DataType dtype, double w, int64_t count);

// out[i] = acc[i] rounded to `dtype` (a copy when the types are the same; out may alias acc
// only then).
Status StoreAccumulator(void* out, const void* acc, DataType dtype, int64_t count);

}  // namespace flock
