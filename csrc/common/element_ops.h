// The per-element arithmetic of flock's kernels, written once for the CPU
// loops (reduce_kernels.cc, weighted_kernels.cc) and the CUDA kernels: every
// function is FLOCK_HD, so the CPU tests check what a GPU computes.
// T is the storage type, C = Arith<T>::Compute the type it computes in
// (float for float16 and bfloat16, which round once when stored).
#pragma once

#include "flock/common/arith.h"
#include "flock/common/hd.h"

namespace flock {
namespace element {

// Reductions of two computed values (the op is chosen outside the loop).
struct Sum {
  template <typename C>
  FLOCK_HD C operator()(C a, C b) const {
    return static_cast<C>(a + b);
  }
};
struct Min {  // as std::min: a unless b is less (a NaN in a stays)
  template <typename C>
  FLOCK_HD C operator()(C a, C b) const {
    return b < a ? b : a;
  }
};
struct Max {  // as std::max: a unless a is less
  template <typename C>
  FLOCK_HD C operator()(C a, C b) const {
    return a < b ? b : a;
  }
};
struct Product {
  template <typename C>
  FLOCK_HD C operator()(C a, C b) const {
    return static_cast<C>(a * b);
  }
};

// inout = op(inout, in), in the storage type.
template <typename T, typename Op>
FLOCK_HD T Reduce(T inout, T in, Op op) {
  using A = Arith<T>;
  return A::Store(op(A::Load(inout), A::Load(in)));
}

// bool: "sum" and "max" are or; "min" and "product" are and.
FLOCK_HD inline uint8_t ReduceBool(uint8_t inout, uint8_t in, bool use_or) {
  return static_cast<uint8_t>(use_or ? (inout | in) != 0 : (inout & in) != 0);
}

// a*x + b*y, stored (x or y may be the output itself).
template <typename T>
FLOCK_HD T ScaledAdd(typename Arith<T>::Compute a, T x, typename Arith<T>::Compute b, T y) {
  using A = Arith<T>;
  return A::Store(a * A::Load(x) + b * A::Load(y));
}

template <typename T>
FLOCK_HD T Scale(T v, typename Arith<T>::Compute factor) {
  using A = Arith<T>;
  return A::Store(A::Load(v) * factor);
}

// The weighted combination of neighbour tensors. Its accumulator holds the
// computed type; Narrow stores it back.
template <typename T>
FLOCK_HD typename Arith<T>::Compute WeightedTerm(typename Arith<T>::Compute w, T x) {
  return w * Arith<T>::Load(x);
}

template <typename T>
FLOCK_HD typename Arith<T>::Compute WeightedPair(typename Arith<T>::Compute wx, T x,
                                                 typename Arith<T>::Compute wy, T y) {
  return wx * Arith<T>::Load(x) + wy * Arith<T>::Load(y);
}

// acc*wacc + x*wx for an accumulator of T itself (float or double); x's term
// first, as WeightedPair(x, acc) adds them.
template <typename T>
FLOCK_HD T Blend(T acc, T wacc, T x, T wx) {
  return wx * x + wacc * acc;
}

template <typename T>
FLOCK_HD T Narrow(float acc) {
  return Arith<T>::Store(acc);
}

}  // namespace element
}  // namespace flock
