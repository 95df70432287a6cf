// Fitting delay models to step times (sim/delay_fit.hpp): the fit recovers the parameters of
// logs drawn from known models, the CDFs are right, bad input is refused.
#include "sim/delay_fit.hpp"

#include <gtest/gtest.h>

#include <variant>

#include "common/error.hpp"

namespace ssim::sim {
namespace {

// times[step][rank] = compute + the generator's arrival offsets.
std::vector<std::vector<double>> draw(const DelayModel& m, int ranks, int steps, double compute) {
  const DelayGenerator gen(m, ranks, 11);
  std::vector<std::vector<double>> t;
  for (int s = 0; s < steps; ++s) {
    std::vector<double>& row = t.emplace_back();
    for (const Seconds& a : gen.iteration(s).arrival) row.push_back(compute + a.value);
  }
  return t;
}

TEST(DelayFit, RecoversAPersistentLognormalStraggler) {
  DelayModel m;
  m.base = Distribution::exponential(Seconds{200e-6});
  m.stragglers.push_back(
      {.rank = 5,
       .extra = Distribution::lognormal_mean_p90(Seconds{9.5e-3}, Seconds{18.8e-3}),
       .persistence = 0.9});
  const DelayFit f = fit_delays(draw(m, 16, 2000, 0.1));
  ASSERT_EQ(f.stragglers.size(), 1u) << f.report();
  EXPECT_EQ(f.stragglers[0].rank, 5);
  EXPECT_NEAR(f.stragglers[0].persistence, 0.9, 0.03) << f.report();
  // The extra delay: lognormal, its mean within 5%.
  const auto* ln = std::get_if<dist::Lognormal>(&f.extra.chosen().params());
  ASSERT_NE(ln, nullptr) << f.report();
  EXPECT_NEAR(f.extra.mean, 9.5e-3, 0.05 * 9.5e-3) << f.report();
  // The base: exponential, its mean within 10% (the step's minimum is taken as 0).
  ASSERT_NE(std::get_if<dist::Exponential>(&f.base.chosen().params()), nullptr) << f.report();
  EXPECT_NEAR(f.base.mean, 200e-6, 20e-6) << f.report();
  EXPECT_LT(f.base.ks(), 0.05) << f.report();
}

// Intermittent: late in 30% of the steps by 3-10 ms. The fit finds the probability, fits the
// delay to the late steps only, and counts persistence among them; the same straggler late in
// every step (its delay's lower tail reaching below the threshold) gets no probability.
TEST(DelayFit, IntermittentStraggler) {
  DelayModel m;
  m.base = Distribution::exponential(Seconds{200e-6});
  m.stragglers.push_back({.rank = 5,
                          .extra = Distribution::uniform(Seconds{3e-3}, Seconds{10e-3}),
                          .persistence = 0.9,
                          .probability = 0.3});
  const DelayFit f = fit_delays(draw(m, 8, 2000, 0.1));
  ASSERT_EQ(f.stragglers.size(), 1u) << f.report();
  EXPECT_NEAR(f.probability, 0.3, 0.03) << f.report();
  EXPECT_NEAR(f.stragglers[0].persistence, 0.9, 0.03) << f.report();
  ASSERT_NE(std::get_if<dist::Uniform>(&f.extra.chosen().params()), nullptr) << f.report();
  EXPECT_NEAR(f.extra.mean, 6.5e-3, 0.3e-3) << f.report();
  ASSERT_EQ(f.model.stragglers.size(), 1u);
  EXPECT_DOUBLE_EQ(f.model.stragglers[0].probability, f.probability);
  EXPECT_NE(f.report().find("\nlate: in "), std::string::npos) << f.report();
  m.stragglers[0].extra = Distribution::lognormal_mean_p90(Seconds{9.5e-3}, Seconds{18.8e-3});
  m.stragglers[0].probability = 1;
  const DelayFit every = fit_delays(draw(m, 8, 2000, 0.1));
  EXPECT_EQ(every.probability, 1.0) << every.report();
  EXPECT_EQ(every.model.stragglers.at(0).probability, 1.0);
}

TEST(DelayFit, NoStragglerAndConstantCases) {
  DelayModel m;
  m.base = Distribution::uniform(Seconds{0}, Seconds{1e-3});
  const DelayFit f = fit_delays(draw(m, 8, 1000, 0.05));
  EXPECT_TRUE(f.stragglers.empty()) << f.report();
  ASSERT_NE(std::get_if<dist::Uniform>(&f.base.chosen().params()), nullptr) << f.report();
  // A GPU 12% slow on every step: a constant extra delay, persistence 1, no base delay.
  DelayModel slow;
  slow.stragglers.push_back({.rank = 2, .extra = Distribution::constant(Seconds{5.583e-3})});
  const DelayFit g = fit_delays(draw(slow, 8, 100, 0.046));
  ASSERT_EQ(g.stragglers.size(), 1u);
  EXPECT_EQ(g.stragglers[0].rank, 2);
  EXPECT_DOUBLE_EQ(g.stragglers[0].persistence, 1.0);
  const auto* c = std::get_if<dist::Constant>(&g.extra.chosen().params());
  ASSERT_NE(c, nullptr) << g.report();
  EXPECT_NEAR(c->value.value, 5.583e-3, 1e-12);
  EXPECT_NE(std::get_if<dist::None>(&g.base.chosen().params()), nullptr) << g.report();
}

TEST(DelayFit, Cdfs) {
  EXPECT_DOUBLE_EQ(distribution_cdf(Distribution::uniform(Seconds{1}, Seconds{3}), 2.5), 0.75);
  EXPECT_NEAR(distribution_cdf(Distribution::exponential(Seconds{2}), 2), 1 - std::exp(-1.0),
              1e-15);
  EXPECT_NEAR(distribution_cdf(Distribution::lognormal(0, 1), 1), 0.5, 1e-15);
  EXPECT_NEAR(distribution_cdf(Distribution::normal(Seconds{5}, Seconds{1}), 5), 0.5, 1e-6);
  EXPECT_EQ(distribution_cdf(Distribution::constant(Seconds{1}), 0.999), 0.0);
  // The quantile and the CDF agree.
  const Distribution d = Distribution::lognormal_mean_p90(Seconds{9.5e-3}, Seconds{18.8e-3});
  EXPECT_NEAR(distribution_cdf(d, d.quantile(0.3).value), 0.3, 1e-9);
}

TEST(DelayFit, BadInput) {
  EXPECT_THROW(fit_delays({{1.0, 2.0}}), InputError);                       // one step
  EXPECT_THROW(fit_delays({{1.0}, {2.0}}), InputError);                     // one rank
  EXPECT_THROW(fit_delays({{1.0, 2.0}, {1.0}}), InputError);                // ragged
  EXPECT_THROW(fit_delays({{1.0, std::nan("")}, {1.0, 2.0}}), InputError);  // NaN
  EXPECT_THROW(fit_delays({{1.0, -2.0}, {1.0, 2.0}}), InputError);
}

}  // namespace
}  // namespace ssim::sim
