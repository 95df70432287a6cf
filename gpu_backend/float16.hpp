// Host-side half (IEEE 754 binary16) and bfloat16 numbers for the host and MPI executors:
// storage is the 16-bit pattern the GPU uses, arithmetic goes through float and rounds back
// to nearest, ties to even (as a GPU kernel that adds in float and converts back does).
//
//   Half a(3.0), b(0.5);
//   a += b;                          // 3.5, exactly
//   float f = static_cast<float>(a);
//   std::uint16_t bits = a.bits;     // 0x4300
//
// half: 1 sign, 5 exponent, 10 fraction bits; every integer up to 2^11 = 2048 is exact.
// bfloat16: 1 sign, 8 exponent, 7 fraction bits; every integer up to 2^8 = 256 is exact.
// Overflow rounds to infinity, NaN stays NaN (quiet).
#pragma once

#include <bit>
#include <cstdint>

namespace ssim::gpu {

// float -> binary16 bits, round to nearest even; subnormals, infinities and NaN handled.
constexpr std::uint16_t float_to_half_bits(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // infinity or NaN (NaN keeps a quiet payload bit)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u));
  }
  // 65520 = (2 - 2^-11) * 2^15 and above rounds to infinity.
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  const int exponent = static_cast<int>(abs >> 23) - 127;
  if (exponent >= -14) {  // a normal half
    const std::uint32_t fraction = abs & 0x7fffffu;
    std::uint32_t h = (static_cast<std::uint32_t>(exponent + 15) << 10) | (fraction >> 13);
    const std::uint32_t rest = fraction & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves the exponent
    return static_cast<std::uint16_t>(sign | h);
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: zero
  // A subnormal half counts units of 2^-24; the float is significand * 2^(exponent - 23).
  const std::uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  const int shift = -(exponent + 1);  // 14 .. 24
  std::uint32_t h = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

constexpr float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t fraction = h & 0x3ffu;
  if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (fraction << 13));
  }
  if (fraction == 0) return std::bit_cast<float>(sign);
  // Subnormal: fraction * 2^-24; normalise into a float (always a normal float).
  int e = -14;
  while ((fraction & 0x400u) == 0) {
    fraction <<= 1;
    --e;
  }
  fraction &= 0x3ffu;
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(e + 127) << 23) |
                              (fraction << 13));
}

// float -> bfloat16 bits (the upper half of the float), round to nearest even.
constexpr std::uint16_t float_to_bfloat16_bits(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  const std::uint32_t lsb = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + lsb) >> 16);
}

constexpr float bfloat16_bits_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// A 16-bit float: Half (binary16) or BFloat16, by its conversion functions.
template <std::uint16_t (*ToBits)(float), float (*ToFloat)(std::uint16_t)>
struct Float16 {
  std::uint16_t bits = 0;

  constexpr Float16() = default;
  constexpr explicit Float16(float v) : bits(ToBits(v)) {}
  constexpr explicit Float16(double v) : bits(ToBits(static_cast<float>(v))) {}
  static constexpr Float16 from_bits(std::uint16_t b) {
    Float16 f;
    f.bits = b;
    return f;
  }
  constexpr explicit operator float() const { return ToFloat(bits); }
  constexpr explicit operator double() const { return ToFloat(bits); }
  constexpr Float16& operator+=(Float16 other) {
    bits = ToBits(ToFloat(bits) + ToFloat(other.bits));
    return *this;
  }
  friend constexpr bool operator==(Float16 a, Float16 b) { return a.bits == b.bits; }
};

using Half = Float16<float_to_half_bits, half_bits_to_float>;
using BFloat16 = Float16<float_to_bfloat16_bits, bfloat16_bits_to_float>;
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace ssim::gpu
