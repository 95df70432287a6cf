#include "calibration/calibration.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "algorithms/cost_model.hpp"
#include "common/error.hpp"

namespace ssim::calib {
namespace {

constexpr double kAlpha = 3e-6;       // 3 us
constexpr double kBandwidth = 450e9;  // 450 GB/s
constexpr double kBeta = 1 / kBandwidth;

// Seeded N(0, 1) by Box-Muller on mt19937_64 output, so the synthetic data (and the fits) are the
// same with every standard library (std::normal_distribution is not).
class Noise {
 public:
  explicit Noise(std::uint64_t seed) : rng_(seed) {}
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }
  // A measurement: the model's time with multiplicative noise of relative standard deviation sd.
  double measure(double model, double sd) { return model * (1 + sd * normal()); }

 private:
  double uniform() { return (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53; }
  std::mt19937_64 rng_;
};

std::string number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// bytes,seconds sweep: `reps` rows per size at 2^lo .. 2^hi bytes (every power of two).
std::string sweep(double alpha, double beta, int lo, int hi, int reps, double sd,
                  std::uint64_t seed, const std::string& extra = "") {
  Noise noise(seed);
  std::string csv;
  for (int k = lo; k <= hi; ++k) {
    const double s = std::ldexp(1.0, k);
    for (int r = 0; r < reps; ++r)
      csv += std::to_string(static_cast<std::uint64_t>(s)) + "," +
             number(noise.measure(alpha + beta * s, sd)) + extra + "\n";
  }
  return csv;
}

Calibration run(const std::string& csv, const CalibrationOptions& options = {},
                const std::string& name = "t.csv") {
  std::istringstream in(csv);
  return calibrate(in, name, options);
}

std::string error_of(const std::string& csv, const CalibrationOptions& options = {}) {
  try {
    run(csv, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

double rel(double got, double want) { return got / want - 1; }

TEST(Calibration, NoiselessSweepIsExact) {
  // Rows exactly on seconds = 3us + bytes / 450GB/s: the fit must return the line itself.
  const Calibration c = run("bytes,seconds\n" + sweep(kAlpha, kBeta, 10, 30, 1, 0, 1));
  ASSERT_EQ(c.fits.size(), 1u);
  const AlphaBetaFit& f = c.fits[0];
  EXPECT_EQ(c.input, CalibrationInput::sweep);
  EXPECT_NEAR(rel(f.alpha.value, kAlpha), 0, 1e-9);
  EXPECT_NEAR(rel(f.bandwidth().value, kBandwidth), 0, 1e-9);
  EXPECT_NEAR(f.quality.r_squared, 1, 1e-12);
  EXPECT_LT(f.quality.max_abs_relative_error, 1e-9);
  EXPECT_EQ(f.quality.rows.size(), 21u);
  EXPECT_EQ(f.quality.rows.front().line, 2);  // the header is line 1
  EXPECT_EQ(f.min_bytes.value, 1024u);
  EXPECT_EQ(f.max_bytes.value, 1u << 30);
}

TEST(Calibration, SweepRecoversAlphaBetaWithinOnePercentForOnePercentNoise) {
  // 21 sizes (1 KiB .. 1 GiB) x 3 repetitions, 1% Gaussian noise. The relative weighting lets
  // the ~30 rows below 256 KiB (alpha-dominated) pin alpha and the large ones pin beta, each to
  // about 1% / sqrt(30) ~ 0.2%; 1% leaves a wide margin.
  const Calibration c = run("bytes,seconds\n" + sweep(kAlpha, kBeta, 10, 30, 3, 0.01, 42));
  ASSERT_EQ(c.fits.size(), 1u);
  const AlphaBetaFit& f = c.fits[0];
  RecordProperty("alpha_recovered_us", number(f.alpha.value * 1e6));
  RecordProperty("bandwidth_recovered_GBps", number(f.bandwidth().value / 1e9));
  EXPECT_LT(std::fabs(rel(f.alpha.value, kAlpha)), 0.01) << f.alpha.value;
  EXPECT_LT(std::fabs(rel(f.bandwidth().value, kBandwidth)), 0.01) << f.bandwidth().value;
  EXPECT_GT(f.quality.r_squared, 0.999);
  // The median |N(0, 1%)| is 0.674%; with a good fit the residuals are the noise.
  EXPECT_GT(f.quality.median_abs_relative_error, 0.004);
  EXPECT_LT(f.quality.median_abs_relative_error, 0.01);
}

TEST(Calibration, ReduceRowsGiveGamma) {
  // seconds = 4us + 0.05 ns/B * bytes on kind=reduce rows, 64 KiB .. 1 GiB, 1% noise; the p2p
  // rows are fitted on their own.
  const double gamma = 0.05e-9, intercept = 4e-6;
  const std::string csv = "bytes,seconds,kind\n" +
                          sweep(kAlpha, kBeta, 10, 30, 2, 0.01, 7, ",p2p") +
                          sweep(intercept, gamma, 16, 30, 3, 0.01, 8, ",reduce");
  const Calibration c = run(csv);
  ASSERT_TRUE(c.reduce.has_value());
  RecordProperty("gamma_recovered_ns_per_B", number(c.reduce->gamma.value * 1e9));
  EXPECT_LT(std::fabs(rel(c.reduce->gamma.value, gamma)), 0.01);
  EXPECT_LT(std::fabs(rel(c.reduce->intercept.value, intercept)), 0.02);
  EXPECT_EQ(c.reduce->quality.rows.size(), 45u);
  ASSERT_EQ(c.fits.size(), 1u);
  EXPECT_LT(std::fabs(rel(c.fits[0].alpha.value, kAlpha)), 0.01);
  EXPECT_EQ(c.rows_used, 42u + 45u);
}

TEST(Calibration, OneFitPerLinkClass) {
  // pcie: 8us, 25 GB/s; nvlink: 3us, 450 GB/s. Fits come sorted by class.
  const std::string csv = "bytes,seconds,link_class\n" +
                          sweep(8e-6, 1 / 25e9, 10, 28, 2, 0, 1, ",pcie") +
                          sweep(kAlpha, kBeta, 10, 28, 2, 0, 1, ",nvlink");
  const Calibration c = run(csv);
  ASSERT_EQ(c.fits.size(), 2u);
  EXPECT_EQ(c.fits[0].link_class, "nvlink");
  EXPECT_EQ(c.fits[1].link_class, "pcie");
  EXPECT_NEAR(rel(c.fits[0].bandwidth().value, kBandwidth), 0, 1e-9);
  EXPECT_NEAR(rel(c.fits[1].alpha.value, 8e-6), 0, 1e-9);

  CalibrationOptions only;
  only.link_class = "pcie";
  const Calibration p = run(csv, only);
  ASSERT_EQ(p.fits.size(), 1u);
  EXPECT_EQ(p.fits[0].link_class, "pcie");
  ASSERT_EQ(p.skipped.size(), 1u);
  EXPECT_EQ(p.skipped[0].lines.size(), 38u);

  only.link_class = "ib";
  EXPECT_NE(error_of(csv, only).find("t.csv: no p2p row has link class 'ib'"), std::string::npos)
      << error_of(csv, only);
}

TEST(Calibration, PiecewiseRecoversTwoRegimes) {
  // A protocol switch at 64 KiB: below, 2us and 10 GB/s; from 64 KiB on, 12us and 400 GB/s.
  // 1% noise. Each piece is recovered; one line through both fits neither.
  const std::string csv = "bytes,seconds\n" + sweep(2e-6, 1 / 10e9, 6, 15, 4, 0.01, 3) +
                          sweep(12e-6, 1 / 400e9, 16, 30, 3, 0.01, 4);
  CalibrationOptions o;
  o.piecewise = parse_size_list("64KiB");
  const Calibration c = run(csv, o);
  ASSERT_EQ(c.fits.size(), 2u);
  const AlphaBetaFit &small = c.fits[0], &large = c.fits[1];
  EXPECT_EQ(describe(small.piece), "[0B, 64KiB)");
  EXPECT_EQ(describe(large.piece), "[64KiB, inf)");
  EXPECT_EQ(small.max_bytes.value, 32768u);
  EXPECT_EQ(large.min_bytes.value, 65536u);
  RecordProperty("small_alpha_us", number(small.alpha.value * 1e6));
  RecordProperty("small_bandwidth_GBps", number(small.bandwidth().value / 1e9));
  RecordProperty("large_alpha_us", number(large.alpha.value * 1e6));
  RecordProperty("large_bandwidth_GBps", number(large.bandwidth().value / 1e9));
  EXPECT_LT(std::fabs(rel(small.alpha.value, 2e-6)), 0.01);
  EXPECT_LT(std::fabs(rel(small.bandwidth().value, 10e9)), 0.01);
  EXPECT_LT(std::fabs(rel(large.alpha.value, 12e-6)), 0.01);
  EXPECT_LT(std::fabs(rel(large.bandwidth().value, 400e9)), 0.01);

  const Calibration whole = run(csv);
  ASSERT_EQ(whole.fits.size(), 1u);
  EXPECT_GT(whole.fits[0].quality.median_abs_relative_error,
            5 * large.quality.median_abs_relative_error);
}

// A result CSV line of a measured run.
std::string run_line(const std::string& algorithm, int n, std::uint64_t bytes, double seconds,
                     double delay = 0, const std::string& straggler = "",
                     const std::string& source = "measured") {
  return source + "," + algorithm + "," + std::to_string(n) + "," + std::to_string(bytes) +
         ",float32," + number(delay) + "," + straggler + ",0," + number(seconds + delay) + "," +
         number(seconds) + ",1,1,,gpu box,2025-06-01T12:00:00Z\n";
}

const std::string kResultHeader =
    "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,after_last_arrival_s,"
    "algbw_GBps,"
    "busbw_GBps,wrong,device,timestamp\n";

TEST(Calibration, CostCoefficientsMatchTheClosedForms) {
  // Ring on n = 8, s bytes: 2(n-1) = 14 messages of s/8 bytes, 7 of them reduced:
  //   T = 14 alpha + 14 s/8 beta + 7 s/8 gamma.
  // rhd on 8 (power of two): 2 log2 8 = 6 messages, the same bytes moved and reduced.
  const double s = 1 << 20;
  const CostCoefficients ring = cost_coefficients(alg::find_algorithm("ring"), 8, s);
  EXPECT_DOUBLE_EQ(ring.alpha, 14);
  EXPECT_DOUBLE_EQ(ring.beta, 1.75 * s);
  EXPECT_DOUBLE_EQ(ring.gamma, 0.875 * s);
  const CostCoefficients rhd = cost_coefficients(alg::find_algorithm("rhd"), 8, s);
  EXPECT_DOUBLE_EQ(rhd.alpha, 6);
  EXPECT_DOUBLE_EQ(rhd.beta, 1.75 * s);
  EXPECT_DOUBLE_EQ(rhd.gamma, 0.875 * s);
}

// ring and rhd runs at several rank counts and sizes, times from the closed forms with gamma
// and 1% noise.
std::string collective_runs(const std::vector<std::string>& algorithms, double gamma, double sd,
                            std::uint64_t seed) {
  Noise noise(seed);
  const alg::CostParams p{.alpha = kAlpha, .beta = kBeta, .gamma = gamma};
  std::string csv = kResultHeader;
  for (const std::string& a : algorithms) {
    for (int n : {2, 3, 4, 6, 8, 16}) {
      for (int k = 16; k <= 30; k += 2) {
        const double s = std::ldexp(1.0, k);
        const double t = a == "ring"  ? alg::ring_cost(n, s, p)
                         : a == "rhd" ? alg::rhd_cost(n, s, p)
                                      : alg::direct_cost(n, s, p);
        for (int r = 0; r < 2; ++r)
          csv += run_line(a, n, static_cast<std::uint64_t>(s), noise.measure(t, sd));
      }
    }
  }
  return csv;
}

TEST(Calibration, CollectiveRunsRecoverAlphaBeta) {
  // 2 algorithms x 6 rank counts x 8 sizes x 2 = 192 rows; gamma 0.02 ns/B is known (given).
  const double gamma = 0.02e-9;
  CalibrationOptions o;
  o.gamma = SecondsPerByte{gamma};
  const Calibration c = run(collective_runs({"ring", "rhd"}, gamma, 0.01, 5), o);
  EXPECT_EQ(c.input, CalibrationInput::collective_runs);
  ASSERT_EQ(c.fits.size(), 1u);
  const AlphaBetaFit& f = c.fits[0];
  RecordProperty("alpha_recovered_us", number(f.alpha.value * 1e6));
  RecordProperty("bandwidth_recovered_GBps", number(f.bandwidth().value / 1e9));
  EXPECT_LT(std::fabs(rel(f.alpha.value, kAlpha)), 0.01) << f.alpha.value;
  EXPECT_LT(std::fabs(rel(f.bandwidth().value, kBandwidth)), 0.01) << f.bandwidth().value;
  EXPECT_EQ(f.quality.rows.size(), 192u);
  EXPECT_EQ(c.ranks, (std::vector<int>{2, 3, 4, 6, 8, 16}));
  EXPECT_EQ(c.devices, std::vector<std::string>{"gpu box"});
  EXPECT_EQ(f.quality.rows[0].label, "ring n=2");
  ASSERT_TRUE(c.assumed_gamma.has_value());
  EXPECT_EQ(c.assumed_gamma->value, gamma);
}

TEST(Calibration, FitGammaNeedsAlgorithmsThatSeparateItFromBeta) {
  const double gamma = 1e-12;  // a reduce at 1 TB/s (HBM class): about half of beta
  CalibrationOptions o;
  o.fit_gamma = true;
  // Ring and rhd reduce exactly half the bytes they move (c = b / 2): gamma and beta collinear.
  const std::string err = error_of(collective_runs({"ring", "rhd"}, gamma, 0.01, 6), o);
  EXPECT_NE(err.find("t.csv: beta and gamma cannot be told apart"), std::string::npos) << err;
  // direct reduces s(n-2)/(n-1) + s while moving 2s(n-2)/(n-1) + ceil(log2 n) s: separable.
  // Noiseless: exact. With 1% noise: the beta and gamma columns differ only through direct's
  // broadcast, so they are nearly collinear and the noise moves both more than alpha; gamma
  // (the smaller term) comes out within 5%, the bandwidth within 2%.
  const Calibration exact = run(collective_runs({"ring", "direct"}, gamma, 0, 6), o);
  ASSERT_EQ(exact.fits.size(), 1u);
  ASSERT_TRUE(exact.fits[0].gamma.has_value());
  EXPECT_NEAR(rel(exact.fits[0].gamma->value, gamma), 0, 1e-6);
  EXPECT_NEAR(rel(exact.fits[0].alpha.value, kAlpha), 0, 1e-6);
  EXPECT_FALSE(exact.assumed_gamma.has_value());
  const Calibration noisy = run(collective_runs({"ring", "direct"}, gamma, 0.01, 6), o);
  RecordProperty("gamma_recovered_ns_per_B", number(noisy.fits[0].gamma->value * 1e9));
  EXPECT_LT(std::fabs(rel(noisy.fits[0].gamma->value, gamma)), 0.05);
  RecordProperty("bandwidth_recovered_GBps", number(noisy.fits[0].bandwidth().value / 1e9));
  EXPECT_LT(std::fabs(rel(noisy.fits[0].bandwidth().value, kBandwidth)), 0.02);
}

// gamma >= 0 as a non-negative least squares: runs made with a negative gamma fit gamma = 0 and
// the alpha and beta of the fit without gamma; the free fit's gamma is reported.
TEST(Calibration, FittedGammaIsBoundedBelowByZero) {
  const double gamma = -0.3e-12;
  const std::string runs = collective_runs({"ring", "direct"}, gamma, 0, 7);
  CalibrationOptions fit;
  fit.fit_gamma = true;
  const Calibration bounded = run(runs, fit);
  ASSERT_EQ(bounded.fits.size(), 1u);
  const AlphaBetaFit& f = bounded.fits[0];
  ASSERT_TRUE(f.gamma.has_value());
  EXPECT_EQ(f.gamma->value, 0.0);
  ASSERT_TRUE(f.negative_gamma.has_value());
  EXPECT_NEAR(rel(f.negative_gamma->value, gamma), 0, 1e-6);    // noiseless: the free fit is exact
  const Calibration without = run(runs, CalibrationOptions{});  // gamma known to be 0
  EXPECT_NEAR(rel(f.alpha.value, without.fits[0].alpha.value), 0, 1e-12);
  EXPECT_NEAR(rel(f.beta.value, without.fits[0].beta.value), 0, 1e-12);
  EXPECT_EQ(f.quality.median_abs_relative_error, without.fits[0].quality.median_abs_relative_error);
  // A non-negative free fit stands as it is.
  EXPECT_FALSE(run(collective_runs({"ring", "direct"}, 1e-12, 0, 6), fit)
                   .fits[0]
                   .negative_gamma.has_value());
}

// Hierarchical runs on 8 ranks as 2 nodes x 4 (gpus_per_node=4): their closed form is exact
// only with those options, recorded in the options column or stated for a file without it.
TEST(Calibration, RowOptionsChooseTheClosedForm) {
  const alg::AlgorithmInfo& info = alg::find_algorithm("hierarchical");
  const alg::Options four(std::map<std::string, std::string>{{"gpus_per_node", "4"}});
  const alg::CostParams p{.alpha = kAlpha, .beta = kBeta, .gamma = 0};
  std::string old_file = kResultHeader;
  std::string new_file = kResultHeader.substr(0, kResultHeader.size() - 1) + ",options\n";
  for (int k = 16; k <= 30; k += 2) {
    const double s = std::ldexp(1.0, k);
    const std::string line =
        run_line("hierarchical", 8, static_cast<std::uint64_t>(s), info.cost(8, s, p, four));
    old_file += line;
    new_file += line.substr(0, line.size() - 1) + ",gpus_per_node=4\n";
  }
  CalibrationOptions stated;
  add_stated_option(stated.stated_options, "hierarchical:gpus_per_node=4");
  for (const Calibration& c : {run(old_file, stated), run(new_file), run(new_file, stated)}) {
    EXPECT_NEAR(rel(c.fits[0].alpha.value, kAlpha), 0, 1e-9);
    EXPECT_NEAR(rel(c.fits[0].bandwidth().value, kBandwidth), 0, 1e-9);
    EXPECT_EQ(c.fits[0].quality.rows[0].label, "hierarchical[gpus_per_node=4] n=8");
  }
  // Fitted with the default (one node of 8), the same times give another alpha, and the
  // calibration says which algorithm's rows had no options.
  const Calibration defaults = run(old_file);
  EXPECT_GT(std::fabs(rel(defaults.fits[0].alpha.value, kAlpha)), 0.05);
  EXPECT_EQ(defaults.unrecorded_options, std::set<std::string>{"hierarchical"});
  EXPECT_TRUE(run(old_file, stated).unrecorded_options.empty());
  EXPECT_TRUE(run(new_file).unrecorded_options.empty());
  // A value the algorithm refuses at the row's rank count names the file, line and option.
  CalibrationOptions three;
  add_stated_option(three.stated_options, "hierarchical:gpus_per_node=3");
  EXPECT_NE(error_of(old_file, three)
                .find("t.csv:2: -O hierarchical:gpus_per_node=3 (the file has no options "
                      "column): hierarchical option gpus_per_node=3: must divide the rank count"),
            std::string::npos)
      << error_of(old_file, three);
  EXPECT_THROW(add_stated_option(three.stated_options, "hierarchical:gpus_per_node=4"),
               InputError);  // given twice
}

// stragglar_hier on 2 nodes of 4 has no closed form: its cost is the generated schedule's
// critical path, a maximum over paths, not linear in the parameters. Its rows are skipped, said
// with the reason, instead of fitting a linearization that holds at one point only.
TEST(Calibration, CostsNotLinearInTheParametersAreSkipped) {
  const alg::AlgorithmInfo& info = alg::find_algorithm("stragglar_hier");
  const alg::Options four(std::map<std::string, std::string>{{"gpus_per_node", "4"}});
  EXPECT_FALSE(linear_cost_coefficients(info, 8, 1 << 20, four).has_value());
  EXPECT_TRUE(linear_cost_coefficients(alg::find_algorithm("ring"), 8, 1 << 20).has_value());
  std::string csv = kResultHeader.substr(0, kResultHeader.size() - 1) + ",options\n";
  const alg::CostParams p{.alpha = kAlpha, .beta = kBeta, .gamma = 0};
  for (int k = 16; k <= 24; k += 2) {
    const double s = std::ldexp(1.0, k);
    for (const char* a : {"ring", "stragglar_hier"}) {
      const std::string line =
          run_line(a, 8, static_cast<std::uint64_t>(s),
                   a == std::string("ring") ? alg::ring_cost(8, s, p) : info.cost(8, s, p, four));
      csv += line.substr(0, line.size() - 1) +
             (a == std::string("ring") ? ",\n" : ",gpus_per_node=4\n");
    }
  }
  const Calibration c = run(csv);
  ASSERT_EQ(c.skipped.size(), 1u);
  EXPECT_EQ(c.skipped[0].reason,
            "stragglar_hier[gpus_per_node=4]: its cost is not linear in (alpha, beta, gamma) here");
  EXPECT_EQ(c.skipped[0].lines, (std::vector<int>{3, 5, 7, 9, 11}));
  EXPECT_NEAR(rel(c.fits[0].alpha.value, kAlpha), 0, 1e-9);
}

TEST(Calibration, CollectiveRunsSkipWhatHasNoClosedForm) {
  // Lines: 1 header, 2-3 ring at 1 MiB and 1 GiB, 4 nccl, 5 simulated, 6 stragglar delayed,
  // 7 rhd delayed (its after_last_arrival is fitted), 8 ring on 1 rank (unsupported).
  const alg::CostParams p{.alpha = kAlpha, .beta = kBeta, .gamma = 0};
  const std::string csv =
      kResultHeader + run_line("ring", 4, 1 << 20, alg::ring_cost(4, 1 << 20, p)) +
      run_line("ring", 4, 1 << 30, alg::ring_cost(4, 1 << 30, p)) +
      run_line("nccl", 4, 1 << 30, 1e-3) + run_line("ring", 4, 1 << 30, 1e-3, 0, "", "simulated") +
      run_line("stragglar", 4, 1 << 30, 1e-3, 5e-3, "3") +
      run_line("rhd", 4, 1 << 30, alg::rhd_cost(4, 1 << 30, p), 5e-3, "3") +
      run_line("ring", 1, 1 << 30, 1e-3);
  const Calibration c = run(csv);
  EXPECT_EQ(c.rows_used, 3u);
  ASSERT_EQ(c.skipped.size(), 4u);
  EXPECT_EQ(c.skipped[0].reason,
            "algorithm 'nccl' without algo= in its options (NCCL's own choice of algorithm "
            "depends on the machine being fitted: no closed form)");
  EXPECT_EQ(c.skipped[0].lines, std::vector<int>{4});
  EXPECT_EQ(c.skipped[1].lines, std::vector<int>{5});
  EXPECT_NE(c.skipped[2].reason.find("stragglar with a delay"), std::string::npos);
  EXPECT_EQ(c.skipped[2].lines, std::vector<int>{6});
  EXPECT_NE(c.skipped[3].reason.find("ring does not support 1 ranks"), std::string::npos)
      << c.skipped[3].reason;
  EXPECT_NEAR(rel(c.fits[0].alpha.value, kAlpha), 0, 1e-9);
  EXPECT_EQ(c.fits[0].quality.rows[2].label, "rhd n=4 delayed");
  // Nothing left to fit: the error says why.
  EXPECT_EQ(error_of(kResultHeader + run_line("nccl", 4, 1 << 30, 1e-3)),
            "t.csv: no measured run can be fitted (algorithm 'nccl' without algo= in its options "
            "(NCCL's own choice of algorithm depends on the machine being fitted: no closed "
            "form))");
}

TEST(Calibration, UnderdeterminedFitsAreRefused) {
  // All rows at one size: alpha and beta trade off freely.
  const std::string one = "bytes,seconds\n65536,3.2e-06\n65536,3.3e-06\n";
  EXPECT_EQ(
      error_of(one),
      "t.csv: 2 rows at 1 distinct size: fitting alpha and beta needs at least 2 distinct sizes");
  // A piece with one size, although the whole file has two.
  CalibrationOptions o;
  o.piecewise = {Bytes{4096}};
  const std::string err = error_of("bytes,seconds\n1024,3e-06\n2048,3.1e-06\n65536,3.2e-06\n", o);
  EXPECT_NE(err.find("t.csv: sizes [4KiB, inf): 1 row at 1 distinct size"), std::string::npos)
      << err;
  EXPECT_NE(err.find("--piecewise"), std::string::npos) << err;
  // Reduce rows at one size.
  EXPECT_NE(error_of("bytes,seconds,kind\n1024,3e-06,p2p\n2048,3.1e-06,p2p\n4096,1e-6,reduce\n")
                .find("kind=reduce rows: 1 row at 1 distinct size"),
            std::string::npos);
  // Collective runs: ring on 4 ranks at one size is underdetermined, at two rank counts it is not
  // (a = 2(n-1) and b = 2(n-1)/n s are independent across n).
  const alg::CostParams p{.alpha = kAlpha, .beta = kBeta, .gamma = 0};
  const std::string four = run_line("ring", 4, 1 << 20, alg::ring_cost(4, 1 << 20, p));
  EXPECT_NE(error_of(kResultHeader + four + four)
                .find("needs at least 2 distinct sizes (or one size at several"),
            std::string::npos);
  const Calibration c =
      run(kResultHeader + four + run_line("ring", 8, 1 << 20, alg::ring_cost(8, 1 << 20, p)));
  EXPECT_NEAR(rel(c.fits[0].alpha.value, kAlpha), 0, 1e-9);
  EXPECT_NEAR(rel(c.fits[0].beta.value, kBeta), 0, 1e-9);
}

TEST(Calibration, MalformedInputNamesFileLineAndColumn) {
  EXPECT_EQ(error_of("bytes,time\n1024,3e-06\n"),
            "t.csv:1: missing column 'seconds' (a calibration input is a sweep with columns "
            "bytes,seconds[,link_class][,kind] or a result CSV (schema/result_csv.hpp))");
  EXPECT_EQ(error_of("bytes,seconds\n1024,3e-06\n4096,fast\n"),
            "t.csv:3: column seconds: bad value 'fast' (expected a time in seconds > 0)");
  EXPECT_EQ(error_of("bytes,seconds\n1024,3e-06\n4096,-3.2e-06\n"),
            "t.csv:3: column seconds: bad value '-3.2e-06' (expected a time in seconds > 0)");
  EXPECT_EQ(error_of("# comment lines are skipped but counted\nbytes,seconds\n-1024,3e-06\n"),
            "t.csv:3: column bytes: bad value '-1024' (expected a whole number of bytes >= 0)");
  EXPECT_EQ(error_of("bytes,seconds,kind\n1024,3e-06,allreduce\n"),
            "t.csv:2: column kind: bad value 'allreduce' (expected p2p or reduce)");
  EXPECT_EQ(error_of("bytes,seconds\n1024,3e-06,7\n"), "t.csv:2: 3 fields, the header has 2");
  EXPECT_EQ(error_of("bytes,seconds\n"), "t.csv: no measurements (only a header)");
  EXPECT_NE(error_of("").find("t.csv: empty file"), std::string::npos);
  // Result CSVs: a device field holding a line break makes the next row start one line later.
  const std::string quoted =
      "measured,ring,4,1024,float32,0,,0,1e-5,1e-5,1,1,,\"box\nrack 2\",now\n";
  EXPECT_EQ(error_of(kResultHeader + quoted + run_line("ring", 4, 4096, -1e-5)),
            "t.csv:4:35: column time_s: " + number(-1e-5) +
                " is outside [0, 1e6] (a time in seconds)");
  EXPECT_EQ(error_of(kResultHeader + run_line("ring", 4, 0, 1e-5)),
            "t.csv:2:17: column bytes: 0 is outside [1, 1125899906842624] (the buffer size in "
            "bytes)");
  // Ranges where the values are read: the straggler against the row's ranks (a negative one is
  // not rank 0), the iteration, sizes and times beyond any measurement.
  EXPECT_EQ(error_of(kResultHeader + run_line("ring", 4, 4096, 1e-5, 0.5, "4")),
            "t.csv:2:34: column straggler: 4 is outside [0, 3] (the late rank of a run of 4 "
            "ranks; empty: none)");
  EXPECT_NE(error_of(kResultHeader + run_line("ring", 4, 4096, 1e-5, 0.5, "-1"))
                .find("column straggler: -1 is outside [0, 3]"),
            std::string::npos);
  EXPECT_NE(error_of(kResultHeader + run_line("ring", 4, 4096, 1e300))
                .find(":35: column time_s: " + number(1e300) + " is outside [0, 1e6]"),
            std::string::npos);
  EXPECT_NE(error_of(kResultHeader + run_line("ring", 100000, 4096, 1e-5))
                .find("column ranks: 100000 is outside [1, 65536]"),
            std::string::npos);
  EXPECT_NE(error_of(kResultHeader + "measured,ring,four,1024,float32,0,,0,1e-5,1e-5,1,1,,b,n\n")
                .find("t.csv:2: column ranks: bad value 'four'"),
            std::string::npos);
}

TEST(Calibration, MeasuredRunsCarryTheirLines) {
  const std::string csv = kResultHeader + "\n" + run_line("ring", 4, 1024, 1e-5) +
                          "measured,ring,4,1024,float32,0,,0,1e-5,1e-5,1,1,,\"a\nb\",now\n" +
                          run_line("rhd", 8, 2048, 2e-5);
  std::istringstream in(csv);
  const std::vector<MeasuredRun> runs = read_measured_runs(in, "m.csv");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].line, 3);  // line 2 is blank
  EXPECT_EQ(runs[1].line, 4);
  EXPECT_EQ(runs[1].row.device, "a\nb");
  EXPECT_EQ(runs[2].line, 6);
  EXPECT_EQ(runs[2].row.algorithm, "rhd");
}

// Found by fuzz/calibration_csv_fuzz.cpp: kind=reduce rows at two distinct but numerically
// inseparable sizes failed an internal check (exit 4) instead of an input error.
TEST(Calibration, ReduceRowsAtInseparableSizesAreAnInputError) {
  std::ifstream in(std::string(STRAGGLESIM_SOURCE_DIR) +
                   "/fuzz/corpus/calibration_csv/issue15_fuzz_reduce_sizes_too_close.csv");
  ASSERT_TRUE(in.good());
  try {
    calibrate(in, "f.csv", {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "f.csv: kind=reduce rows: 2 rows at 2 distinct sizes too close together"),
              std::string::npos)
        << e.what();
  }
}

TEST(Calibration, SizeLists) {
  EXPECT_EQ(parse_size_list("64KiB, 1MiB"), (std::vector<Bytes>{Bytes{65536}, Bytes{1 << 20}}));
  EXPECT_THROW(parse_size_list("1MiB,64KiB"), InputError);
  EXPECT_THROW(parse_size_list("0"), InputError);
  EXPECT_THROW(parse_size_list("64KB,x"), InputError);
  CalibrationOptions o;
  o.piecewise = {Bytes{10}, Bytes{10}};
  EXPECT_NE(error_of("bytes,seconds\n1,1\n2,2\n", o).find("strictly increasing"),
            std::string::npos);
}

}  // namespace
}  // namespace ssim::calib
