// float16 (IEEE binary16) and bfloat16 storage types with float conversions.
//
// Conversions are branch-light bit manipulation so loops over them vectorize;
// float -> half rounds to nearest even, as hardware converters do. Reductions
// on these types compute in float32 and round once per stored element.
#pragma once

#include <cstdint>
#include <cstring>

#include "flock/common/hd.h"

namespace flock {

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

FLOCK_HD inline uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}
FLOCK_HD inline float BitsToFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

FLOCK_HD inline float ToFloat(BFloat16 h) {
  return BitsToFloat(static_cast<uint32_t>(h.bits) << 16);
}

FLOCK_HD inline BFloat16 ToBFloat16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return {static_cast<uint16_t>((u >> 16) | 0x40u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest, ties to even
  return {static_cast<uint16_t>(u >> 16)};
}

FLOCK_HD inline float ToFloat(Float16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent != 0) return BitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in float.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return BitsToFloat(sign | FloatBits(magnitude));
}

FLOCK_HD inline Float16 ToFloat16(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7e00u)};   // NaN
  if (abs >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // overflow -> inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: let the float adder do the rounding by adding
    // 0.5, whose ulp equals the half subnormal step of 2^-24.
    const float shifted = BitsToFloat(abs) + 0.5f;
    return {static_cast<uint16_t>(sign | (FloatBits(shifted) - 0x3f000000u))};
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xc8000fffu + odd;  // -(112 << 23) + 0xfff
  return {static_cast<uint16_t>(sign | (rounded >> 13))};
}

}  // namespace flock
