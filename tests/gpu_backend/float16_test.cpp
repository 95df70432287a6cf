#include "gpu_backend/float16.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ssim::gpu {
namespace {

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(3.5f), 0x4300);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);               // largest finite
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);  // overflow
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(std::nanf("")))));
}

TEST(Half, RoundsToNearestEven) {
  // Between 2048 and 4096 halves step by 2: 2049 is a tie -> 2048 (even), 2051 -> 2052.
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(2049.0f)), 2048.0f);
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(2051.0f)), 2052.0f);
  EXPECT_EQ(half_bits_to_float(float_to_half_bits(2050.9f)), 2050.0f);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to 1.
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Subnormal ties: 2^-25 is halfway between 0 and 2^-24 -> 0; 3 * 2^-25 -> 2 * 2^-24.
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half_bits(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -26)), 0x0000);
}

TEST(Half, EveryPatternRoundTripsThroughFloat) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float f = half_bits_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half_bits(f), bits) << std::hex << b;
  }
}

TEST(Half, IntegersUpTo2048AreExactAndSumsOfThemToo) {
  for (int i = 0; i <= 2048; ++i) {
    EXPECT_EQ(static_cast<float>(Half(static_cast<float>(i))), static_cast<float>(i)) << i;
  }
  Half sum(0.0f);
  for (int i = 0; i < 256; ++i) sum += Half(8.0f);
  EXPECT_EQ(static_cast<float>(sum), 2048.0f);
  sum += Half(1.0f);  // 2049 is not a half
  EXPECT_EQ(static_cast<float>(sum), 2048.0f);
}

TEST(BFloat16, KnownBitPatternsAndRounding) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bfloat16_bits(256.0f), 0x4380);
  // Between 256 and 512 bfloat16 steps by 2: 257 ties to 256, 259 to 260.
  EXPECT_EQ(bfloat16_bits_to_float(float_to_bfloat16_bits(257.0f)), 256.0f);
  EXPECT_EQ(bfloat16_bits_to_float(float_to_bfloat16_bits(259.0f)), 260.0f);
  EXPECT_EQ(bfloat16_bits_to_float(float_to_bfloat16_bits(258.9f)), 258.0f);
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(std::nanf("")))));
  for (int i = 0; i <= 256; ++i) {
    EXPECT_EQ(static_cast<float>(BFloat16(static_cast<float>(i))), static_cast<float>(i)) << i;
  }
  BFloat16 sum(250.0f);
  sum += BFloat16(6.0f);
  EXPECT_EQ(static_cast<double>(sum), 256.0);
}

TEST(BFloat16, EveryPatternRoundTripsThroughFloat) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float f = bfloat16_bits_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bfloat16_bits(f), bits) << std::hex << b;
  }
}

}  // namespace
}  // namespace ssim::gpu
