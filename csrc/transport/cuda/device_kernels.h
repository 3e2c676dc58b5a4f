// flock's CUDA kernels: the reductions and the weighted combination of
// neighbour tensors on device memory, with the CPU kernels' semantics
// (common/reduce_kernels.h, common/weighted_kernels.h) and the same
// per-element arithmetic (common/element_ops.h). Each call queues its work on
// `stream` and returns at once; the Status reports what could be checked
// before running (dtype, launch errors).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "flock/common/data_type.h"
#include "flock/common/reduce_kernels.h"
#include "flock/common/status.h"

namespace flock::gpu {

// inout[i] = inout[i] (op) in[i]; average combines like sum.
Status ReduceInto(cudaStream_t stream, void* inout, const void* in, int64_t count, DataType dtype,
                  ReduceOp op);

// buffer[i] *= factor; floating types only.
Status ScaleInPlace(cudaStream_t stream, void* buffer, int64_t count, DataType dtype,
                    double factor);

// The weighted average in an accumulator of AccumulatorType(dtype):
// acc = w * x, acc += w * x, and out = acc rounded to dtype.
Status WeightedStore(cudaStream_t stream, void* acc, const void* x, DataType dtype, double w,
                     int64_t count);
Status WeightedAccumulate(cudaStream_t stream, void* acc, const void* x, DataType dtype, double w,
                          int64_t count);
Status StoreAccumulator(cudaStream_t stream, void* out, const void* acc, DataType dtype,
                        int64_t count);

}  // namespace flock::gpu
