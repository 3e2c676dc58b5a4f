// float16/bfloat16 conversions against independent references: the compiler's
// own _Float16 arithmetic type, and the nearest-representable definition.
#include "flock/common/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace flock {
namespace {

TEST(Float16, EveryHalfValueWidensExactly) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    Float16 h{static_cast<uint16_t>(bits)};
    _Float16 reference;
    std::memcpy(&reference, &h.bits, 2);
    const float expected = static_cast<float>(reference);
    const float got = ToFloat(h);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(FloatBits(got), FloatBits(expected)) << bits;
    }
  }
}

TEST(Float16, NarrowingRoundsToNearestEvenLikeTheCompiler) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  auto check = [](float f) {
    _Float16 reference = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &reference, 2);
    const uint16_t got = ToFloat16(f).bits;
    if (std::isnan(f)) {
      ASSERT_EQ(got & 0x7c00u, 0x7c00u);
      ASSERT_NE(got & 0x3ffu, 0u);
    } else {
      ASSERT_EQ(got, expected) << f;
    }
  };
  for (int i = 0; i < 2000000; ++i) check(BitsToFloat(any_bits(rng)));
  // Ties and edges: halfway points, overflow boundary, subnormals, zeros.
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e9f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                  6.1e-5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, -1e-10f}) {
    check(f);
  }
}

TEST(BFloat16, WidenIsExactAndNarrowIsNearest) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 1000000; ++i) {
    const float f = BitsToFloat(any_bits(rng));
    const BFloat16 b = ToBFloat16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(ToFloat(b)));
      continue;
    }
    // Nearest: no other bfloat16 (the neighbours) is closer to f.
    const double got = ToFloat(b);
    for (int delta : {-1, 1}) {
      const double other = ToFloat(BFloat16{static_cast<uint16_t>(b.bits + delta)});
      if (std::isinf(got) || std::isnan(other)) continue;
      ASSERT_LE(std::abs(got - f), std::abs(other - f)) << f;
    }
  }
  EXPECT_EQ(ToFloat(ToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(ToBFloat16(1.0f + 1.0f / 256).bits, ToBFloat16(1.0f).bits);  // tie -> even
}

}  // namespace
}  // namespace flock
