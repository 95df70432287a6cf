// Integer powers of two, written once for every layer (rank counts, chunk counts, tree depths).
//
//   ceil_log2(5) == 3    // doublings from 1 to at least 5
//   floor_log2(5) == 2   // the largest power of two <= 5 is 1 << 2
//   is_pow2(8) && !is_pow2(6) && !is_pow2(0)
//
// Semantics: ceil_log2(n) is 0 for n <= 1; floor_log2 needs n >= 1; is_pow2 is false for
// n <= 0. All are constexpr over <bit>.
#pragma once

#include <bit>

namespace ssim {

constexpr int ceil_log2(int n) { return n <= 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1)); }

constexpr int floor_log2(int n) { return std::bit_width(static_cast<unsigned>(n)) - 1; }

constexpr bool is_pow2(int n) { return n > 0 && std::has_single_bit(static_cast<unsigned>(n)); }

}  // namespace ssim
