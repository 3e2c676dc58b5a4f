// The kernels of device_kernels.h. Compiled by nvcc for the GPU build and as
// C++ for the fake-device tests (launch.h runs the same bodies on the host).
#include "flock/transport/cuda/device_kernels.h"

#include "flock/common/element_ops.h"
#include "flock/common/weighted_kernels.h"
#include "flock/transport/cuda/cuda_status.h"
#include "flock/transport/cuda/launch.h"

namespace flock::gpu {
namespace {

template <typename T, typename Op>
struct ReduceBody {
  T* inout;
  const T* in;
  Op op;
  FLOCK_HD void operator()(int64_t i) const { inout[i] = element::Reduce(inout[i], in[i], op); }
};

struct ReduceBoolBody {
  uint8_t* inout;
  const uint8_t* in;
  bool use_or;
  FLOCK_HD void operator()(int64_t i) const {
    inout[i] = element::ReduceBool(inout[i], in[i], use_or);
  }
};

template <typename T>
struct ScaleBody {
  T* buffer;
  typename Arith<T>::Compute factor;
  FLOCK_HD void operator()(int64_t i) const { buffer[i] = element::Scale(buffer[i], factor); }
};

template <typename T, bool kAccumulate>
struct WeightedBody {
  typename Arith<T>::Compute* acc;
  const T* x;
  typename Arith<T>::Compute w;
  FLOCK_HD void operator()(int64_t i) const {
    if (kAccumulate) {
      acc[i] += element::WeightedTerm(w, x[i]);
    } else {
      acc[i] = element::WeightedTerm(w, x[i]);
    }
  }
};

template <typename T>
struct NarrowBody {
  T* out;
  const float* acc;
  FLOCK_HD void operator()(int64_t i) const { out[i] = element::Narrow<T>(acc[i]); }
};

Status Launched(cudaError_t error, const char* kernel, DataType dtype) {
  return CudaStatus(
      error, std::string("launching flock's ") + kernel + " kernel for " + DataTypeName(dtype));
}

template <typename T>
cudaError_t ReduceTyped(cudaStream_t s, void* inout, const void* in, int64_t n, ReduceOp op) {
  auto* io = static_cast<T*>(inout);
  const auto* x = static_cast<const T*>(in);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return ForEachElement(s, n, ReduceBody<T, element::Sum>{io, x, {}});
    case ReduceOp::kMin: return ForEachElement(s, n, ReduceBody<T, element::Min>{io, x, {}});
    case ReduceOp::kMax: return ForEachElement(s, n, ReduceBody<T, element::Max>{io, x, {}});
    case ReduceOp::kProduct:
      return ForEachElement(s, n, ReduceBody<T, element::Product>{io, x, {}});
  }
  return cudaErrorInvalidValue;
}

cudaError_t ReduceAny(cudaStream_t s, void* inout, const void* in, int64_t n, DataType dtype,
                      ReduceOp op) {
  switch (dtype) {
    case DataType::kBool: {
      const bool use_or = op == ReduceOp::kSum || op == ReduceOp::kMax;
      return ForEachElement(
          s, n,
          ReduceBoolBody{static_cast<uint8_t*>(inout), static_cast<const uint8_t*>(in), use_or});
    }
    case DataType::kUInt8: return ReduceTyped<uint8_t>(s, inout, in, n, op);
    case DataType::kInt8: return ReduceTyped<int8_t>(s, inout, in, n, op);
    case DataType::kInt16: return ReduceTyped<int16_t>(s, inout, in, n, op);
    case DataType::kInt32: return ReduceTyped<int32_t>(s, inout, in, n, op);
    case DataType::kInt64: return ReduceTyped<int64_t>(s, inout, in, n, op);
    case DataType::kFloat16: return ReduceTyped<Float16>(s, inout, in, n, op);
    case DataType::kBFloat16: return ReduceTyped<BFloat16>(s, inout, in, n, op);
    case DataType::kFloat32: return ReduceTyped<float>(s, inout, in, n, op);
    case DataType::kFloat64: return ReduceTyped<double>(s, inout, in, n, op);
  }
  return cudaErrorInvalidValue;
}

// Runs Launch<T>::Run(args...) for the floating dtypes; other dtypes are refused.
template <template <typename> class Launch, typename... Args>
Status ForFloating(const char* kernel, DataType dtype, Args... args) {
  cudaError_t error = cudaSuccess;
  switch (dtype) {
    case DataType::kFloat16: error = Launch<Float16>::Run(args...); break;
    case DataType::kBFloat16: error = Launch<BFloat16>::Run(args...); break;
    case DataType::kFloat32: error = Launch<float>::Run(args...); break;
    case DataType::kFloat64: error = Launch<double>::Run(args...); break;
    default:
      return Status::Unsupported(std::string("flock's ") + kernel +
                                 " kernel needs a floating-point dtype, got " +
                                 DataTypeName(dtype));
  }
  return Launched(error, kernel, dtype);
}

template <typename T>
struct ScaleLaunch {
  static cudaError_t Run(cudaStream_t s, void* buffer, int64_t n, double factor) {
    using C = typename Arith<T>::Compute;
    return ForEachElement(s, n, ScaleBody<T>{static_cast<T*>(buffer), static_cast<C>(factor)});
  }
};

template <bool kAccumulate>
struct WeightedLaunch {
  template <typename T>
  struct Of {
    static cudaError_t Run(cudaStream_t s, void* acc, const void* x, double w, int64_t n) {
      using C = typename Arith<T>::Compute;
      return ForEachElement(s, n,
                            WeightedBody<T, kAccumulate>{
                                static_cast<C*>(acc), static_cast<const T*>(x), static_cast<C>(w)});
    }
  };
};

template <typename T>
struct NarrowLaunch {
  static cudaError_t Run(cudaStream_t s, void* out, const void* acc, int64_t n) {
    return ForEachElement(s, n,
                          NarrowBody<T>{static_cast<T*>(out), static_cast<const float*>(acc)});
  }
};

}  // namespace

Status ReduceInto(cudaStream_t stream, void* inout, const void* in, int64_t count, DataType dtype,
                  ReduceOp op) {
  FLOCK_RETURN_IF_ERROR(CheckReduceSupported(dtype, op));
  return Launched(ReduceAny(stream, inout, in, count, dtype, op), "reduction", dtype);
}

Status ScaleInPlace(cudaStream_t stream, void* buffer, int64_t count, DataType dtype,
                    double factor) {
  return ForFloating<ScaleLaunch>("scaling", dtype, stream, buffer, count, factor);
}

Status WeightedStore(cudaStream_t stream, void* acc, const void* x, DataType dtype, double w,
                     int64_t count) {
  return ForFloating<WeightedLaunch<false>::Of>("weighted store", dtype, stream, acc, x, w, count);
}

Status WeightedAccumulate(cudaStream_t stream, void* acc, const void* x, DataType dtype, double w,
                          int64_t count) {
  return ForFloating<WeightedLaunch<true>::Of>("weighted accumulate", dtype, stream, acc, x, w,
                                               count);
}

Status StoreAccumulator(cudaStream_t stream, void* out, const void* acc, DataType dtype,
                        int64_t count) {
  if (dtype == DataType::kFloat32 || dtype == DataType::kFloat64) {
    if (out == acc) return Status::OK();
    return CudaStatus(cudaMemcpyAsync(out, acc, static_cast<size_t>(count) * DataTypeSize(dtype),
                                      cudaMemcpyDeviceToDevice, stream),
                      "copying the weighted average to its output");
  }
  // float16/bfloat16 (their accumulator is float32); others are refused.
  return ForFloating<NarrowLaunch>("store", dtype, stream, out, acc, count);
}

}  // namespace flock::gpu
