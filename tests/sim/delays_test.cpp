#include "sim/delays.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "common/error.hpp"

namespace ssim::sim {
namespace {

Seconds ms(double v) { return Seconds{v * 1e-3}; }

// Runs `f`, which must throw InputError whose message contains `part`.
template <class F>
void expect_input_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no InputError; expected one containing '" << part << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message '" << e.what() << "' lacks '" << part << "'";
  }
}

std::vector<double> draw(const Distribution& d, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = d.sample(rng).value;
  return v;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double quantile_of(std::vector<double> v, double p) {
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size()));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// ---------------------------------------------------------------------------------------------
// Distributions: exact quantiles and means

TEST(Distribution, NormalQuantilesMatchTables) {
  // Truncation at 0 is 10 standard deviations below the mean: it removes 7.6e-24 of the mass,
  // so the quantiles are those of N(10ms, 1ms): Phi^{-1}(0.975) = 1.959963984540054.
  const Distribution n = Distribution::normal(ms(10), ms(1));
  EXPECT_NEAR(n.quantile(0.5).value, 10e-3, 1e-15);
  EXPECT_NEAR(n.quantile(0.975).value, 10e-3 + 1.959963984540054e-3, 1e-15);
  EXPECT_NEAR(n.quantile(0.025).value, 10e-3 - 1.959963984540054e-3, 1e-15);
  // Far tail: Phi^{-1}(1e-10) = -6.361340902404056.
  const Distribution ln = Distribution::lognormal(0.0, 1.0);
  EXPECT_NEAR(std::log(ln.quantile(1e-10).value), -6.361340902404056, 1e-12);
}

TEST(Distribution, NormalTruncatedAtZeroIsHalfNormalForZeroMean) {
  // mean 0: the upper half of N(0, s^2). Mean s*sqrt(2/pi); median s*Phi^{-1}(0.75).
  const Distribution h = Distribution::normal(Seconds{0.0}, Seconds{2.0});
  EXPECT_NEAR(h.mean()->value, 2.0 * std::sqrt(2.0 / M_PI), 1e-12);
  EXPECT_NEAR(h.quantile(0.5).value, 2.0 * 0.6744897501960817, 1e-12);
  const std::vector<double> v = draw(h, 20000, 7);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
  EXPECT_NEAR(mean_of(v), h.mean()->value, 0.02 * h.mean()->value);
}

TEST(Distribution, NormalWithNegativeMeanKeepsOnlyTheUpperTail) {
  // mean -1ms, stddev 1ms: a = 1, E = mean + s*phi(1)/Q(1) = -1 + 0.2419707/0.1586553 = 0.525135ms.
  const Distribution d = Distribution::normal(ms(-1), ms(1));
  EXPECT_NEAR(d.mean()->value, 0.5251352e-3, 1e-9);
  const std::vector<double> v = draw(d, 20000, 11);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
  EXPECT_NEAR(mean_of(v), d.mean()->value, 0.02 * d.mean()->value);
}

TEST(Distribution, LognormalFromMeanAndP90) {
  // r = ln(18.8/9.5) = 0.682565; sigma = z - sqrt(z^2 - 2r) = 1.281552 - sqrt(0.277244)
  // = 1.281552 - 0.526540 = 0.755012; mu = ln(9.5e-3) - sigma^2/2 = -4.656463 - 0.285022
  // = -4.941485.
  const Distribution d = Distribution::lognormal_mean_p90(ms(9.5), ms(18.8));
  const auto& p = std::get<dist::Lognormal>(d.params());
  EXPECT_NEAR(p.sigma, 0.755012, 1e-5);
  EXPECT_NEAR(p.mu, -4.941485, 1e-5);
  EXPECT_NEAR(d.mean()->value, 9.5e-3, 1e-15);
  EXPECT_NEAR(d.quantile(0.9).value, 18.8e-3, 1e-14);

  const std::vector<double> v = draw(d, 20000, 1);
  EXPECT_NEAR(mean_of(v), 9.5e-3, 0.02 * 9.5e-3);
  EXPECT_NEAR(quantile_of(v, 0.9), 18.8e-3, 0.03 * 18.8e-3);
}

TEST(Distribution, LognormalMeanP90AtTheBoundaryGivesSigmaZ) {
  // p90/mean = exp(z^2/2) makes the discriminant 0: sigma = z exactly.
  const double z = 1.2815515655446004;
  const Distribution d = Distribution::lognormal_mean_p90(ms(1), ms(std::exp(z * z / 2)));
  EXPECT_NEAR(std::get<dist::Lognormal>(d.params()).sigma, z, 1e-6);
}

TEST(Distribution, ExponentialUniformConstantNone) {
  const Distribution e = Distribution::exponential(ms(4));
  EXPECT_NEAR(e.quantile(0.5).value, 4e-3 * std::log(2.0), 1e-15);  // median = mean ln 2
  const std::vector<double> ve = draw(e, 20000, 3);
  EXPECT_NEAR(mean_of(ve), 4e-3, 0.02 * 4e-3);

  const Distribution u = Distribution::uniform(ms(2), ms(6));
  EXPECT_DOUBLE_EQ(u.quantile(0.25).value, 3e-3);
  const std::vector<double> vu = draw(u, 20000, 4);
  EXPECT_NEAR(mean_of(vu), 4e-3, 0.02 * 4e-3);
  EXPECT_GE(*std::min_element(vu.begin(), vu.end()), 2e-3);
  EXPECT_LE(*std::max_element(vu.begin(), vu.end()), 6e-3);

  EXPECT_EQ(draw(Distribution::constant(ms(5)), 10, 5), std::vector<double>(10, 5e-3));
  EXPECT_EQ(draw(Distribution::none(), 10, 5), std::vector<double>(10, 0.0));
  EXPECT_EQ(Distribution().kind_name(), "none");
}

TEST(Distribution, Pareto) {
  // P(X > x) = (x_m/x)^alpha: median x_m 2^(1/alpha) = 2ms * 2^(1/3) = 2.519842ms;
  // mean alpha x_m / (alpha - 1) = 3ms.
  const Distribution d = Distribution::pareto(ms(2), 3.0);
  EXPECT_NEAR(d.quantile(0.5).value, 2e-3 * std::cbrt(2.0), 1e-15);
  EXPECT_NEAR(d.mean()->value, 3e-3, 1e-15);
  const std::vector<double> v = draw(d, 20000, 9);
  EXPECT_NEAR(quantile_of(v, 0.5), 2e-3 * std::cbrt(2.0), 0.02 * 2.52e-3);
  EXPECT_NEAR(mean_of(v), 3e-3, 0.02 * 3e-3);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 2e-3);
  EXPECT_FALSE(Distribution::pareto(ms(2), 1.0).mean().has_value());  // infinite mean
}

TEST(Distribution, EmpiricalResamplesItsSamples) {
  const Distribution d = Distribution::empirical({ms(3), ms(1), ms(2)}, "inline");
  // Sorted [1, 2, 3]ms; quantile(p) = sorted[floor(3p)].
  EXPECT_EQ(d.quantile(0.1).value, 1e-3);
  EXPECT_EQ(d.quantile(0.5).value, 2e-3);
  EXPECT_EQ(d.quantile(0.99).value, 3e-3);
  EXPECT_NEAR(d.mean()->value, 2e-3, 1e-18);
  const std::vector<double> v = draw(d, 30000, 2);
  for (double target : {1e-3, 2e-3, 3e-3}) {
    const auto hits = std::count(v.begin(), v.end(), target);
    EXPECT_NEAR(static_cast<double>(hits) / 30000.0, 1.0 / 3, 0.02) << target;
  }
}

TEST(Distribution, DescribeNamesKindAndParameters) {
  EXPECT_EQ(Distribution::constant(ms(5)).describe(), "constant(5.000ms)");
  EXPECT_EQ(Distribution::lognormal_mean_p90(ms(9.5), ms(18.8)).describe(),
            "lognormal(mu=-4.941, sigma=0.755; mean=9.500ms, p90=18.800ms)");
  EXPECT_EQ(Distribution::pareto(ms(2), 0.5).describe(),
            "pareto(scale=2.000ms, shape=0.5; mean=inf)");
}

// ---------------------------------------------------------------------------------------------
// Distributions: one test per invalid parameter

TEST(DistributionInvalid, ConstantNegative) {
  expect_input_error([] { Distribution::constant(ms(-1)); }, "value must be >= 0");
}
TEST(DistributionInvalid, UniformLowNegative) {
  expect_input_error([] { Distribution::uniform(ms(-1), ms(1)); }, "0 <= low <= high");
}
TEST(DistributionInvalid, UniformHighBelowLow) {
  expect_input_error([] { Distribution::uniform(ms(2), ms(1)); }, "0 <= low <= high");
}
TEST(DistributionInvalid, NormalStddevNotPositive) {
  expect_input_error([] { Distribution::normal(ms(1), ms(0)); }, "stddev must be > 0");
}
TEST(DistributionInvalid, NormalMeanFarBelowZero) {
  expect_input_error([] { Distribution::normal(ms(-11), ms(1)); }, "mean must be >= -10 * stddev");
}
TEST(DistributionInvalid, LognormalSigmaNotPositive) {
  expect_input_error([] { Distribution::lognormal(-5, 0); }, "sigma must be > 0");
  expect_input_error([] { Distribution::lognormal(-5, -1); }, "sigma must be > 0");
}
TEST(DistributionInvalid, LognormalSigmaOverflows) {
  expect_input_error([] { Distribution::lognormal(0, 100); }, "infinite delays");
}
TEST(DistributionInvalid, LognormalP90NotAboveMean) {
  expect_input_error([] { Distribution::lognormal_mean_p90(ms(10), ms(10)); },
                     "p90 must be greater than the mean");
  expect_input_error([] { Distribution::lognormal_mean_p90(ms(10), ms(5)); },
                     "p90 must be greater than the mean");
}
TEST(DistributionInvalid, LognormalP90TooFarAboveMean) {
  // The largest p90/mean reachable with sigma <= z is exp(z^2/2) = 2.2735.
  expect_input_error([] { Distribution::lognormal_mean_p90(ms(10), ms(23)); }, "at most 2.273");
}
TEST(DistributionInvalid, LognormalMeanNotPositive) {
  expect_input_error([] { Distribution::lognormal_mean_p90(ms(0), ms(5)); }, "mean must be > 0");
}
TEST(DistributionInvalid, ExponentialMeanNotPositive) {
  expect_input_error([] { Distribution::exponential(ms(0)); }, "mean must be > 0");
}
TEST(DistributionInvalid, ParetoScaleNotPositive) {
  expect_input_error([] { Distribution::pareto(ms(0), 2); }, "scale (x_m) must be > 0");
}
TEST(DistributionInvalid, ParetoShapeNotPositive) {
  expect_input_error([] { Distribution::pareto(ms(1), 0); }, "shape (alpha) must be > 0");
}
TEST(DistributionInvalid, ParetoShapeTooSmallOverflows) {
  // The largest draw is x_m * 2^(53/shape): infinite for shape 0.01.
  expect_input_error([] { Distribution::pareto(ms(1), 0.01); }, "infinite delays");
}
TEST(DistributionInvalid, EmpiricalEmpty) {
  expect_input_error([] { Distribution::empirical({}); }, "no samples");
}
TEST(DistributionInvalid, EmpiricalNegativeSample) {
  expect_input_error([] { Distribution::empirical({ms(1), ms(-1)}); }, "sample 1");
}
TEST(DistributionInvalid, NotFinite) {
  expect_input_error([] { Distribution::exponential(Seconds{NAN}); }, "must be finite");
  expect_input_error([] { Distribution::uniform(ms(0), Seconds{INFINITY}); }, "must be finite");
}

// ---------------------------------------------------------------------------------------------
// Traces

// The arrivals of trace_long.csv and trace_wide.csv, in milliseconds.
const std::vector<std::vector<double>> kTraceMs = {
    {1.0, 2.5, 0.5, 4.0}, {1.5, 3.0, 3.0, 0.25}, {6.0, 0.0, 2.0, 5.0}};

// The same arrivals as a Trace, in seconds.
Trace trace_4x3() {
  std::vector<std::vector<Seconds>> arrivals;
  for (const auto& row : kTraceMs) {
    std::vector<Seconds>& out = arrivals.emplace_back();
    for (double v : row) out.push_back(ms(v));
  }
  return Trace(std::move(arrivals), "trace_4x3");
}

TEST(Trace, HoldsItsRowsAndCycles) {
  const Trace t = trace_4x3();
  ASSERT_EQ(t.iterations(), 3);
  ASSERT_EQ(t.ranks(), 4);
  for (int i = 0; i < 5; ++i) {
    for (int r = 0; r < 4; ++r) {
      EXPECT_DOUBLE_EQ(
          t.at(i)[static_cast<std::size_t>(r)].value,
          kTraceMs[static_cast<std::size_t>(i % 3)][static_cast<std::size_t>(r)] * 1e-3)
          << i << " " << r;
    }
  }
  EXPECT_EQ(t.describe(), "trace(trace_4x3, 3 iterations x 4 ranks, cycled)");
}

TEST(TraceInvalid, RowsOfDifferentLengthsAndNegativeArrivals) {
  expect_input_error(
      [] {
        Trace({{ms(1), ms(2)}, {ms(1)}}, "x");
      },
      "x: iteration 1 has 1 ranks, iteration 0 has 2");
  expect_input_error(
      [] {
        Trace({{ms(1), Seconds{-1e-3}}}, "x");
      },
      "x: iteration 0 rank 1: arrival must be finite and >= 0");
  expect_input_error([] { Trace({}, "x"); }, "x: a trace needs at least one iteration");
}

TEST(Trace, ReplayCyclesAndFindsLastRank) {
  DelayModel m;
  m.trace = trace_4x3();
  const DelayGenerator gen(m, 4, 1, StragglerPolicy::previous);
  // Last arrivals: iteration 0 rank 3 (4ms); 1: ranks 1 and 2 tie at 3ms -> rank 1; 2: rank 0.
  const std::vector<IterationArrivals> a = gen.iterations(0, 7);
  const std::vector<int> last = {3, 1, 0, 3, 1, 0, 3};
  const std::vector<int> predicted = {3, 3, 1, 0, 3, 1, 0};  // iteration 0: no fixed rank -> n-1
  for (int i = 0; i < 7; ++i) {
    const auto k = static_cast<std::size_t>(i);
    EXPECT_EQ(a[k].last_rank, last[k]) << i;
    EXPECT_EQ(a[k].predicted_straggler, predicted[k]) << i;
    EXPECT_DOUBLE_EQ(a[k].arrival[1].value, kTraceMs[k % 3][1] * 1e-3);
  }
}

TEST(Trace, StragglerAddsOnTopOfTheTrace) {
  DelayModel m;
  m.trace = trace_4x3();
  m.stragglers.push_back({.rank = 2, .extra = Distribution::constant(ms(10)), .persistence = 1.0});
  const IterationArrivals a = DelayGenerator(m, 4, 1).iteration(0);
  EXPECT_DOUBLE_EQ(a.arrival[2].value, 10.5e-3);
  EXPECT_DOUBLE_EQ(a.arrival[3].value, 4e-3);
  EXPECT_EQ(a.last_rank, 2);
}

// ---------------------------------------------------------------------------------------------
// Generator: determinism

DelayModel lognormal_with_straggler() {
  DelayModel m;
  m.base = Distribution::lognormal_mean_p90(ms(9.5), ms(18.8));
  m.stragglers.push_back(
      {.rank = 5, .extra = Distribution::exponential(ms(20)), .persistence = 0.85});
  return m;
}

void expect_same(const IterationArrivals& a, const IterationArrivals& b) {
  EXPECT_EQ(a.iteration, b.iteration);
  ASSERT_EQ(a.arrival.size(), b.arrival.size());
  for (std::size_t r = 0; r < a.arrival.size(); ++r) EXPECT_EQ(a.arrival[r], b.arrival[r]);
  EXPECT_EQ(a.last_rank, b.last_rank);
  EXPECT_EQ(a.predicted_straggler, b.predicted_straggler);
  EXPECT_EQ(a.straggler_ranks, b.straggler_ranks);
}

TEST(DelayGenerator, SameSeedSameArrivals) {
  const DelayGenerator g1(lognormal_with_straggler(), 8, 42, StragglerPolicy::previous);
  const DelayGenerator g2(lognormal_with_straggler(), 8, 42, StragglerPolicy::previous);
  const std::vector<IterationArrivals> a = g1.iterations(0, 50);
  const std::vector<IterationArrivals> b = g2.iterations(0, 50);
  for (std::size_t i = 0; i < a.size(); ++i) expect_same(a[i], b[i]);
  const DelayGenerator other(lognormal_with_straggler(), 8, 43, StragglerPolicy::previous);
  EXPECT_NE(other.iteration(0).arrival, a[0].arrival);
}

TEST(DelayGenerator, LognormalStreamIsPinned) {
  // Base draws of iterations 0..2, ranks 0..2, for lognormal(mean 9.5 ms, p90 18.8 ms) with
  // seed 42: fixed by the SplitMix64 stream seeds, std::mt19937_64, the 52-bit uniform and the
  // lognormal quantile. Computed with the Abramowitz-Stegun + Halley normal quantile used
  // before Boost.Math; Boost's agrees to 1e-15 relative (here one value differs in its last
  // bits), so a change of stream, not of rounding, fails this.
  DelayModel m;
  m.base = Distribution::lognormal_mean_p90(ms(9.5), ms(18.8));
  const DelayGenerator gen(m, 3, 42);
  const double expected[3][3] = {
      {0.015312593931939924, 0.012294666084437727, 0.02947086754390988},
      {0.0035389420036308298, 0.0054534928169038925, 0.0061310097992280229},
      {0.010503191419952257, 0.0058506137212945538, 0.0085196351884467697}};
  for (int i = 0; i < 3; ++i) {
    const IterationArrivals a = gen.iteration(i);
    for (std::size_t r = 0; r < 3; ++r) {
      EXPECT_NEAR(a.arrival[r].value, expected[i][r], 1e-14 * expected[i][r]) << i << " " << r;
    }
  }
}

TEST(DelayGenerator, IterationDoesNotDependOnEarlierDraws) {
  const DelayGenerator gen(lognormal_with_straggler(), 8, 42, StragglerPolicy::previous);
  const std::vector<IterationArrivals> all = gen.iterations(0, 6);
  expect_same(
      DelayGenerator(lognormal_with_straggler(), 8, 42, StragglerPolicy::previous).iteration(5),
      all[5]);
  expect_same(gen.iterations(3, 3)[2], all[5]);
  EXPECT_NE(all[4].arrival, all[5].arrival);
}

TEST(DelayGenerator, ThreadsGetIdenticalResults) {
  const DelayGenerator gen(lognormal_with_straggler(), 16, 7, StragglerPolicy::oracle);
  const std::vector<IterationArrivals> serial = gen.iterations(0, 200);
  std::vector<IterationArrivals> parallel(200);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 200; i += 4) parallel[static_cast<std::size_t>(i)] = gen.iteration(i);
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < serial.size(); ++i) expect_same(serial[i], parallel[i]);
}

TEST(DelayGenerator, AddingAStragglerKeepsTheBaseDraws) {
  DelayModel plain;
  plain.base = Distribution::exponential(ms(3));
  DelayModel with = plain;
  with.stragglers.push_back(
      {.rank = 1, .extra = Distribution::constant(ms(7)), .persistence = 1.0});
  const DelayGenerator a(plain, 4, 99);
  const DelayGenerator b(with, 4, 99);
  for (int i = 0; i < 20; ++i) {
    const IterationArrivals x = a.iteration(i);
    const IterationArrivals y = b.iteration(i);
    for (std::size_t r = 0; r < 4; ++r) {
      EXPECT_DOUBLE_EQ(y.arrival[r].value, x.arrival[r].value + (r == 1 ? 7e-3 : 0.0));
    }
  }
}

TEST(DelayGenerator, BaseDrawsMatchTheDistribution) {
  // 20 ranks x 1000 iterations = 20000 draws through the generator's per-iteration streams.
  DelayModel m;
  m.base = Distribution::lognormal_mean_p90(ms(9.5), ms(18.8));
  const DelayGenerator gen(m, 20, 2024);
  std::vector<double> v;
  for (const IterationArrivals& a : gen.iterations(0, 1000)) {
    for (Seconds s : a.arrival) v.push_back(s.value);
  }
  EXPECT_NEAR(mean_of(v), 9.5e-3, 0.02 * 9.5e-3);
  EXPECT_NEAR(quantile_of(v, 0.9), 18.8e-3, 0.03 * 18.8e-3);
}

// ---------------------------------------------------------------------------------------------
// Generator: persistent stragglers

TEST(DelayGenerator, PersistenceFrequency) {
  // Base delays < 1ms, extra 50ms: the straggler is always the last rank. Home rank 2 for a
  // fraction p = 0.8; otherwise one of the other 7 ranks uniformly: 0.2/7 = 2.86% each,
  // i.e. about 143 of 5000 iterations (binomial sd 11.8).
  DelayModel m;
  m.base = Distribution::uniform(ms(0), ms(1));
  m.stragglers.push_back({.rank = 2, .extra = Distribution::constant(ms(50)), .persistence = 0.8});
  const DelayGenerator gen(m, 8, 5);
  std::vector<int> where(8, 0);
  for (const IterationArrivals& a : gen.iterations(0, 5000)) {
    ASSERT_EQ(a.straggler_ranks.size(), 1u);
    EXPECT_EQ(a.last_rank, a.straggler_ranks[0]);
    ++where[static_cast<std::size_t>(a.straggler_ranks[0])];
  }
  EXPECT_NEAR(where[2] / 5000.0, 0.8, 0.02);
  for (int r = 0; r < 8; ++r) {
    if (r != 2) {
      EXPECT_GT(where[static_cast<std::size_t>(r)], 100) << r;
      EXPECT_LT(where[static_cast<std::size_t>(r)], 190) << r;
    }
  }
}

TEST(DelayGenerator, PersistenceZeroAndOne) {
  DelayModel m;
  m.stragglers.push_back({.rank = 0, .extra = Distribution::constant(ms(1)), .persistence = 1.0});
  m.stragglers.push_back({.rank = 3, .extra = Distribution::constant(ms(1)), .persistence = 0.0});
  const DelayGenerator gen(m, 6, 8);
  for (const IterationArrivals& a : gen.iterations(0, 500)) {
    EXPECT_EQ(a.straggler_ranks[0], 0);
    EXPECT_NE(a.straggler_ranks[1], 3);
    EXPECT_NE(a.straggler_ranks[1], 0);
  }
}

TEST(DelayGenerator, MovedStragglersNeverShareARank) {
  // 4 ranks, homes 0 and 1, both may move: a mover goes to a rank that is no entry's home and
  // not taken by the earlier entry, i.e. rank 2 or 3.
  DelayModel m;
  m.stragglers.push_back({.rank = 0, .extra = Distribution::constant(ms(1)), .persistence = 0.5});
  m.stragglers.push_back({.rank = 1, .extra = Distribution::constant(ms(2)), .persistence = 0.5});
  const DelayGenerator gen(m, 4, 3);
  int both_moved = 0;
  for (const IterationArrivals& a : gen.iterations(0, 2000)) {
    const int s0 = a.straggler_ranks[0];
    const int s1 = a.straggler_ranks[1];
    EXPECT_NE(s0, s1);
    EXPECT_TRUE(s0 == 0 || s0 >= 2) << s0;
    EXPECT_TRUE(s1 == 1 || s1 >= 2) << s1;
    both_moved += (s0 != 0 && s1 != 1);
    EXPECT_DOUBLE_EQ(a.arrival[static_cast<std::size_t>(s0)].value, 1e-3);
    EXPECT_DOUBLE_EQ(a.arrival[static_cast<std::size_t>(s1)].value, 2e-3);
    EXPECT_EQ(a.last_rank, s1);
  }
  EXPECT_NEAR(both_moved / 2000.0, 0.25, 0.03);
}

// ---------------------------------------------------------------------------------------------
// Generator: straggler policies

TEST(StragglerPolicy, OracleIsTheLastArrivalLowestOnTies) {
  // Nobody late (all arrive at 0): no rank is named; the default straggler (n-1, or the given
  // rank) keeps the schedule's own numbering.
  const DelayGenerator ties(DelayModel{}, 5, 1, StragglerPolicy::oracle);
  EXPECT_FALSE(ties.iteration(0).late);
  EXPECT_EQ(ties.iteration(0).last_rank, 4);
  EXPECT_EQ(ties.iteration(0).predicted_straggler, 4);
  const DelayGenerator given(DelayModel{}, 5, 1, StragglerPolicy::oracle, 2);
  EXPECT_EQ(given.iteration(0).last_rank, 2);
  // Within 1 ns is no one late; a 2 ns lead is a straggler, and a tie for last among late ranks
  // goes to the lowest of them.
  DelayModel m;
  std::vector<std::vector<Seconds>> rows;
  for (const std::vector<double>& row : std::vector<std::vector<double>>{
           {0, 0.5e-9, 0, 0, 0}, {0, 2e-9, 0, 0, 0}, {0, 1e-3, 1e-3, 0, 0}}) {
    std::vector<Seconds>& out = rows.emplace_back();
    for (double v : row) out.push_back(Seconds{v});
  }
  m.trace = Trace(std::move(rows), "t");
  const DelayGenerator near(m, 5, 1, StragglerPolicy::oracle);
  EXPECT_FALSE(near.iteration(0).late);
  EXPECT_EQ(near.iteration(0).last_rank, 4);
  EXPECT_TRUE(near.iteration(1).late);
  EXPECT_EQ(near.iteration(1).last_rank, 1);
  EXPECT_TRUE(near.iteration(2).late);
  EXPECT_EQ(near.iteration(2).last_rank, 1);
  const DelayGenerator gen(lognormal_with_straggler(), 8, 4, StragglerPolicy::oracle);
  for (const IterationArrivals& a : gen.iterations(0, 100)) {
    EXPECT_EQ(a.predicted_straggler, a.last_rank);
    const auto top = std::max_element(a.arrival.begin(), a.arrival.end());
    EXPECT_EQ(a.last_rank, static_cast<int>(top - a.arrival.begin()));
  }
}

TEST(StragglerPolicy, FixedAlwaysPredictsTheGivenRank) {
  const DelayGenerator gen(lognormal_with_straggler(), 8, 4, StragglerPolicy::fixed, 6);
  for (const IterationArrivals& a : gen.iterations(0, 50)) EXPECT_EQ(a.predicted_straggler, 6);
}

TEST(StragglerPolicy, PreviousUsesLastIterationsLastArrival) {
  const DelayGenerator gen(lognormal_with_straggler(), 8, 4, StragglerPolicy::previous);
  const std::vector<IterationArrivals> a = gen.iterations(0, 100);
  EXPECT_EQ(a[0].predicted_straggler, 7);  // no fixed rank: n-1
  for (std::size_t i = 1; i < a.size(); ++i) {
    EXPECT_EQ(a[i].predicted_straggler, a[i - 1].last_rank);
    EXPECT_EQ(gen.iteration(static_cast<int>(i)).predicted_straggler, a[i - 1].last_rank);
  }
  const DelayGenerator seeded(lognormal_with_straggler(), 8, 4, StragglerPolicy::previous, 5);
  EXPECT_EQ(seeded.iteration(0).predicted_straggler, 5);
  EXPECT_EQ(seeded.iteration(1).predicted_straggler, a[0].last_rank);
}

TEST(StragglerPolicy, ParseAndName) {
  EXPECT_EQ(parse_straggler_policy("previous"), StragglerPolicy::previous);
  EXPECT_EQ(to_string(StragglerPolicy::oracle), "oracle");
  expect_input_error([] { parse_straggler_policy("psychic"); }, "allowed: oracle, fixed, previous");
}

// ---------------------------------------------------------------------------------------------
// Generator: one test per invalid setting

DelayModel one_straggler(int rank, double persistence) {
  DelayModel m;
  m.stragglers.push_back(
      {.rank = rank, .extra = Distribution::constant(ms(1)), .persistence = persistence});
  return m;
}

TEST(DelayGeneratorInvalid, RanksBelowOne) {
  expect_input_error([] { DelayGenerator(DelayModel{}, 0, 1); }, "ranks must be >= 1");
}
TEST(DelayGeneratorInvalid, StragglerRankOutOfRange) {
  expect_input_error([] { DelayGenerator(one_straggler(8, 1.0), 8, 1); },
                     "straggler 0: rank 8 out of range (allowed 0..7)");
  expect_input_error([] { DelayGenerator(one_straggler(-1, 1.0), 8, 1); }, "rank -1 out of range");
}
TEST(DelayGeneratorInvalid, DuplicateStragglerRank) {
  DelayModel m = one_straggler(2, 1.0);
  m.stragglers.push_back(m.stragglers[0]);
  expect_input_error([&] { DelayGenerator(m, 8, 1); },
                     "straggler 1: rank 2 is already the home rank");
}
TEST(DelayGeneratorInvalid, PersistenceOutsideUnitInterval) {
  expect_input_error([] { DelayGenerator(one_straggler(1, 1.5), 8, 1); },
                     "persistence must lie in [0, 1]");
  expect_input_error([] { DelayGenerator(one_straggler(1, -0.1), 8, 1); },
                     "persistence must lie in [0, 1]");
  expect_input_error([] { DelayGenerator(one_straggler(1, NAN), 8, 1); },
                     "persistence must lie in [0, 1]");
}
TEST(DelayGeneratorInvalid, NoRoomToMove) {
  // One straggler that may move needs a second rank to move to.
  expect_input_error([] { DelayGenerator(one_straggler(0, 0.5), 1, 1); }, "need at least 2 ranks");
  EXPECT_NO_THROW(DelayGenerator(one_straggler(0, 1.0), 1, 1));
}
TEST(DelayGeneratorInvalid, FixedPolicyWithoutRank) {
  expect_input_error([] { DelayGenerator(DelayModel{}, 4, 1, StragglerPolicy::fixed); },
                     "'fixed' needs a straggler rank");
}
TEST(DelayGeneratorInvalid, FixedRankOutOfRange) {
  expect_input_error([] { DelayGenerator(DelayModel{}, 4, 1, StragglerPolicy::fixed, 4); },
                     "straggler rank 4 out of range (allowed 0..3)");
}
TEST(DelayGeneratorInvalid, TraceWithBaseDistribution) {
  DelayModel m;
  m.trace = trace_4x3();
  m.base = Distribution::constant(ms(1));
  expect_input_error([&] { DelayGenerator(m, 4, 1); }, "a trace replaces the base distribution");
}
TEST(DelayGeneratorInvalid, TraceRankCountMismatch) {
  DelayModel m;
  m.trace = trace_4x3();
  expect_input_error([&] { DelayGenerator(m, 8, 1); }, "has 4 ranks, the run has 8");
}

TEST(DelayGeneratorInvalid, ProbabilityOutsideUnitInterval) {
  for (double p : {1.5, -0.1, static_cast<double>(NAN)}) {
    DelayModel m = one_straggler(1, 1.0);
    m.stragglers[0].probability = p;
    expect_input_error([&] { DelayGenerator(m, 8, 1); },
                       "straggler 0: probability must lie in [0, 1]");
  }
}

// ---------------------------------------------------------------------------------------------
// Intermittent stragglers (probability < 1)

DelayModel intermittent(double probability, double persistence) {
  DelayModel m;
  m.base = Distribution::exponential(ms(0.05));
  m.stragglers.push_back({.rank = 5,
                          .extra = Distribution::uniform(ms(3), ms(10)),
                          .persistence = persistence,
                          .probability = probability});
  return m;
}

// Late in about `probability` of the iterations; when late, the rank and the delay are the very
// draws of the every-iteration model (paired), and the base delays are untouched.
TEST(IntermittentStraggler, LateInItsShareOfIterationsOnTheSameDraws) {
  const DelayGenerator every(intermittent(1.0, 0.8), 8, 7);
  const DelayGenerator some(intermittent(0.3, 0.8), 8, 7);
  const int n = 4000;
  int late = 0, home = 0;
  for (int i = 0; i < n; ++i) {
    const IterationArrivals a = every.iteration(i), b = some.iteration(i);
    ASSERT_EQ(b.straggler_late.size(), 1u);
    EXPECT_EQ(a.straggler_late[0], 1);
    EXPECT_EQ(a.straggler_ranks, b.straggler_ranks);
    const auto r = static_cast<std::size_t>(b.straggler_ranks[0]);
    for (std::size_t k = 0; k < 8; ++k) {
      if (k != r || b.straggler_late[0]) {
        EXPECT_EQ(a.arrival[k], b.arrival[k]) << i;
      }
    }
    if (b.straggler_late[0]) {
      ++late;
      home += b.straggler_ranks[0] == 5;
      EXPECT_EQ(b.last_rank, b.straggler_ranks[0]);
      EXPECT_GE(b.arrival[r].value, 3e-3);
    } else {
      EXPECT_LT(b.arrival[r].value, 3e-3) << i;  // only its base delay
    }
  }
  // Binomial: 4000 x 0.3 = 1200 +- 29 (1 sd); persistence among the late ones 0.8 +- 0.012.
  EXPECT_NEAR(late, 1200, 120);
  EXPECT_NEAR(static_cast<double>(home) / late, 0.8, 0.05);
}

TEST(IntermittentStraggler, ZeroNeverLateAndSeeded) {
  const DelayGenerator never(intermittent(0.0, 1.0), 8, 3);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(never.iteration(i).straggler_late[0], 0);
  const DelayGenerator g1(intermittent(0.4, 0.9), 8, 11, StragglerPolicy::previous);
  const DelayGenerator g2(intermittent(0.4, 0.9), 8, 11, StragglerPolicy::previous);
  const std::vector<IterationArrivals> a = g1.iterations(0, 100), b = g2.iterations(0, 100);
  for (std::size_t i = 0; i < a.size(); ++i) {
    expect_same(a[i], b[i]);
    EXPECT_EQ(a[i].straggler_late, b[i].straggler_late);
  }
}

TEST(IntermittentStraggler, Describe) {
  EXPECT_EQ(DelayModel(intermittent(0.3, 0.9)).describe(),
            "base=exponential(mean=50.000us), stragglers=[rank 5 +uniform(3.000ms, 10.000ms) "
            "persistence 0.9 probability 0.3]");
}

TEST(DelayGenerator, DescribeEchoesEverything) {
  const DelayGenerator gen(one_straggler(1, 0.9), 4, 42, StragglerPolicy::fixed, 1);
  EXPECT_EQ(gen.describe(),
            "delays: ranks=4, seed=42, policy=fixed rank 1, base=none, "
            "stragglers=[rank 1 +constant(1.000ms) persistence 0.9]");
}

}  // namespace
}  // namespace ssim::sim
