#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "round_timing.hpp"

namespace ssim::alg {
namespace {

TEST(Ring, VerifiesWithTwoNMinusOneRounds) {
  for (int n = 2; n <= 64; ++n) {
    const Schedule s = generate("ring", n, Options{});
    const VerifyResult v = verify(s);
    ASSERT_TRUE(v.ok()) << "n=" << n << ": " << v.error->to_string();
    EXPECT_EQ(s.rounds.size(), static_cast<std::size_t>(2 * (n - 1)));
    EXPECT_EQ(v.summary.max_sends_per_rank_round, 1);
    EXPECT_EQ(v.summary.max_receives_per_rank_round, 1);
  }
}

TEST(Ring, ClosedFormMatchesRounds) {
  const CostParams p{3e-6, 1.0 / 450e9, 1e-11};
  for (int n : {2, 3, 8, 17, 64}) {
    const Schedule s = generate("ring", n, Options{});
    const double bytes = 1024.0 * n * 7;
    const double expect = find_algorithm("ring").cost(n, bytes, p, Options{});
    EXPECT_NEAR(testing::evaluate_rounds(s, bytes, p).makespan, expect, 1e-12 * expect) << n;
  }
}

}  // namespace
}  // namespace ssim::alg
