// Reduction kernels over contiguous buffers of one DataType.
//
// Vocabulary: `inout` is updated in place from `in`, element by element;
// `count` is a number of elements. Loops are plain and branch-free per
// element so the compiler vectorizes them; float16/bfloat16 elements are
// widened to float32, combined, and rounded once when stored.
//
// Semantics for bool: sum and max are logical or, min and product are logical and.
#pragma once

#include <cstdint>

#include "flock/common/data_type.h"
#include "flock/common/status.h"

namespace flock {

enum class ReduceOp : uint8_t { kSum = 0, kAverage, kMin, kMax, kProduct };
constexpr int kNumReduceOps = 5;

const char* ReduceOpName(ReduceOp op);

// Whether `op` is defined for `dtype` (average needs a floating type).
Status CheckReduceSupported(DataType dtype, ReduceOp op);

// inout[i] = inout[i] (op) in[i]. Average combines like sum (scale afterwards).
Status ReduceInto(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op);

// buffer[i] *= factor; floating types only.
Status ScaleInPlace(void* buffer, int64_t count, DataType dtype, double factor);

// out[i] = a * x[i] + b * y[i]; floating types only. `out` may alias x or y.
Status ScaledAdd(void* out, double a, const void* x, double b, const void* y, int64_t count,
                 DataType dtype);

}  // namespace flock
