// PendingRequest: one submitted op as the engine's loop holds it, and the
// identifiers and results that go with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "flock/common/data_type.h"
#include "flock/common/tensor_view.h"
#include "flock/requests/op_signature.h"

namespace flock {

using HandleId = int64_t;

// Leaves the elements of a resized vector uninitialized: an output the
// transport overwrites whole need not be zeroed first (16 MB: ~2 ms).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  UninitializedAllocator() noexcept = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}  // NOLINT: rebinding
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using OutputBytes = std::vector<char, UninitializedAllocator<char>>;

// An output the engine allocated (allgather: its size is known only then): in
// `bytes`, or for a CUDA tensor in device memory owned by `device_data`.
struct GatheredTensor {
  OutputBytes bytes;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  Device device;
  std::shared_ptr<void> device_data;
  // Alltoall: the rows received from each rank, in rank order (empty otherwise).
  std::vector<int64_t> received_splits;
  void* data() { return device_data ? device_data.get() : static_cast<void*>(bytes.data()); }
};

struct PendingRequest {
  HandleId handle = 0;
  OpRequest op;       // kind, name, input, reduction, root, group, local rejection
  TensorView output;  // where the result goes (may be the input); unused by allgathers
  // A negotiated neighbor op (CUDA tensors): which call of its match name it
  // is (NeighborExchange::AddDeviceCall); else -1.
  int64_t neighbor_call = -1;
  std::chrono::steady_clock::time_point submitted;
};

}  // namespace flock
