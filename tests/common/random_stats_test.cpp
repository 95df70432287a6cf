#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
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

namespace ssim {
namespace {

// StreamQuantiles: exact (quantile() to the bit) up to its limit; past it within 5e-5 relative
// of the exact order statistics, in bins whose count does not grow with the stream.
TEST(StreamQuantiles, ExactThenBinnedInBoundedMemory) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> draw(-3.0, 0.4);  // step-time-like: tens of ms, skewed
  StreamQuantiles exact_only(1 << 20), binned(1000);
  std::vector<double> all;
  for (int i = 0; i < 200'000; ++i) {
    const double v = draw(rng);
    all.push_back(v);
    if (i < 1000) {
      exact_only.add(v);
    }
    binned.add(v);
    if (i == 999) {
      for (double p : {0.0, 0.5, 0.9, 0.99, 1.0}) {
        EXPECT_EQ(binned.quantile(p), quantile(all, p)) << p;
        EXPECT_EQ(exact_only.quantile(p), quantile(all, p)) << p;
      }
      EXPECT_TRUE(binned.exact());
    }
  }
  EXPECT_FALSE(binned.exact());
  EXPECT_EQ(binned.count(), 200'000u);
  for (double p : {0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const double want = quantile(all, p);
    EXPECT_NEAR(binned.quantile(p), want, 5e-5 * want) << p;
  }
  EXPECT_EQ(binned.max(), *std::max_element(all.begin(), all.end()));
  const double spread = std::log(*std::max_element(all.begin(), all.end()) /
                                 *std::min_element(all.begin(), all.end()));
  EXPECT_LE(binned.entries(), spread / std::log(StreamQuantiles::kBinRatio) + 2);
  EXPECT_LT(binned.entries(), 50'000u);  // against 200,000 values
  // Zeros are counted apart.
  StreamQuantiles z(2);
  for (double v : {0.0, 0.0, 0.0, 1.0}) z.add(v);
  EXPECT_EQ(z.quantile(0.5), 0.0);
  EXPECT_EQ(z.quantile(1.0), 1.0);
}

}  // namespace
}  // namespace ssim
