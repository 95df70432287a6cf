// IEEE binary16 (CUDA __half) and bfloat16 (__nv_bfloat16) on the CPU, for the stand-in's
// kernels and NCCL reductions: storage as 16 bits, arithmetic in float, round to nearest even
// on the way back, as the GPU's conversions do.
#pragma once

#include <cstdint>
#include <cstring>

namespace ssim::emu {

struct Half {
  std::uint16_t bits = 0;
};
struct Bfloat16 {
  std::uint16_t bits = 0;
};

inline float to_float(Half h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  std::uint32_t exp = (h.bits >> 10) & 0x1fu;
  std::uint32_t man = h.bits & 0x3ffu;
  std::uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);  // inf, nan
  } else if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      out = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

inline Half to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return {static_cast<std::uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0))};
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // overflow: inf
  if (e <= 0) {                                                        // subnormal or zero
    if (e < -10) return {sign};
    man |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t h = man >> shift;
    const std::uint32_t rest = man & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;
    return {static_cast<std::uint16_t>(sign | h)};
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (man >> 13);
  const std::uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
  return {static_cast<std::uint16_t>(sign | h)};
}

inline float to_float(Bfloat16 b) {
  const std::uint32_t x = static_cast<std::uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

inline Bfloat16 to_bfloat16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return {static_cast<std::uint16_t>((x >> 16) | 0x40u)};  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return {static_cast<std::uint16_t>(x >> 16)};
}

}  // namespace ssim::emu
