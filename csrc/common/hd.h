// FLOCK_HD marks the element arithmetic that CPU and CUDA kernels share: with
// nvcc it is __host__ __device__, with a host compiler nothing. The arithmetic
// is written once (arith.h, half.h, element_ops.h), so the CPU tests cover
// what the GPU kernels compute.
#pragma once

#if defined(__CUDACC__)
#define FLOCK_HD __host__ __device__
#else
#define FLOCK_HD
#endif
