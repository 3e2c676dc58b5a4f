#include "flock/transport/cuda/cuda_status.h"

namespace flock::gpu {

Status CudaStatus(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::OK();
  std::string message =
      what + ": " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")";
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    message += "; CUDA tensors need a GPU with a driver that supports CUDA " +
               std::to_string(CUDART_VERSION / 1000) + "." +
               std::to_string(CUDART_VERSION % 1000 / 10) + " (the CPU ops are unaffected)";
  }
  return Status::TransportError(std::move(message));
}

}  // namespace flock::gpu
