#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/error.hpp"
#include "common/random.hpp"
#include "common/stats.hpp"

namespace ssim {
namespace {

TEST(SplitMix64, MatchesTheReferenceOutputs) {
  // Vigna's splitmix64.c seeded with 0 and 42: its first two outputs.
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  SplitMix64 gen(42);
  EXPECT_EQ(gen.next(), 0xbdd732262feb6e95ULL);
  EXPECT_EQ(gen.next(), 0x28efe333b266f103ULL);
  static_assert(splitmix64(0) == 0xe220a8397b1dcdafULL, "usable in constant expressions");
}

TEST(SplitMix64, GeneratorStepsByTheIncrement) {
  SplitMix64 gen(7);
  for (std::uint64_t k = 0; k < 4; ++k)
    EXPECT_EQ(gen.next(), splitmix64(7 + k * kSplitMix64Increment));
}

TEST(Quantile, Type7Interpolation) {
  // 1, 2, 3, 4: h = p * 3.
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 1.0 / 3), 2);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 1), 4);
  EXPECT_DOUBLE_EQ(quantile({5}, 0.9), 5);
}

TEST(Quantile, RejectsNoValuesAndLevelsOutsideZeroOne) {
  EXPECT_THROW(quantile({}, 0.5), InternalError);
  EXPECT_THROW(quantile({1, 2}, 1.5), InternalError);
}

}  // namespace
}  // namespace ssim
