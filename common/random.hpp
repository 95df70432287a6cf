// The project's one seed mixer: SplitMix64 (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014; the constants of Vigna's public-domain
// splitmix64.c). Used wherever a seed is derived from other numbers (a sweep point's seed, an
// iteration's delay streams, ECMP hashing, tie-breaks in schedule construction), so that every
// derived stream is fixed by the numbers alone, independent of the standard library.
//
//   std::uint64_t s = splitmix64(seed ^ hash);   // one well-mixed 64-bit value
//   SplitMix64 gen(42);
//   std::uint64_t a = gen.next(), b = gen.next();  // splitmix64(42), splitmix64(42 + golden)
#pragma once

#include <cstdint>

namespace ssim {

// The golden-ratio increment SplitMix64 adds to its state on every step.
inline constexpr std::uint64_t kSplitMix64Increment = 0x9e3779b97f4a7c15ULL;

// SplitMix64's output for state x: x + increment, then the variant-13 finaliser. A bijection
// on 64-bit values; splitmix64(0) = 0xe220a8397b1dcdaf.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += kSplitMix64Increment;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The generator: the k-th next() (from 0) returns splitmix64(seed + k * increment).
class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t seed) : state_(seed) {}
  constexpr std::uint64_t next() {
    const std::uint64_t out = splitmix64(state_);
    state_ += kSplitMix64Increment;
    return out;
  }

 private:
  std::uint64_t state_;
};

}  // namespace ssim
