#include <gtest/gtest.h>

#include "common/error.hpp"
#include "experiments/config/config.hpp"

namespace ssim::experiments {
namespace {

const std::string kDataDir = std::string(STRAGGLESIM_SOURCE_DIR) + "/tests/data";

sim::DelayModel load(const std::string& yaml) {
  const ConfigReader r = ConfigReader::from_string(yaml, "d.yaml");
  return load_delay_model(r.root(), kDataDir);
}

std::string error_of(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ConfigDelays, DistributionsAndStragglers) {
  const sim::DelayModel m = load(
      "base: {distribution: lognormal, mean: 9.5ms, p90: 18.8ms}\n"
      "persistent:\n"
      "  - {rank: 7, delay: 10ms, persistence: 0.9}\n"
      "  - {rank: 3, delay: {distribution: exponential, mean: 2ms}}\n");
  EXPECT_EQ(m.base.kind_name(), "lognormal");
  EXPECT_NEAR(m.base.mean()->value, 9.5e-3, 1e-12);
  ASSERT_EQ(m.stragglers.size(), 2u);
  EXPECT_EQ(m.stragglers[0].rank, 7);
  EXPECT_EQ(m.stragglers[0].extra.kind_name(), "constant");
  EXPECT_DOUBLE_EQ(m.stragglers[0].persistence, 0.9);
  EXPECT_DOUBLE_EQ(m.stragglers[1].persistence, 1.0);
  EXPECT_NEAR(m.stragglers[1].extra.mean()->value, 2e-3, 1e-15);
}

// An intermittent straggler: probability per step, persistence as before.
TEST(ConfigDelays, Probability) {
  const sim::DelayModel m = load(
      "persistent: [{rank: 5, delay: {distribution: uniform, low: 3ms, high: 10ms}, "
      "persistence: 0.9, probability: 0.3}]\n");
  ASSERT_EQ(m.stragglers.size(), 1u);
  EXPECT_DOUBLE_EQ(m.stragglers[0].probability, 0.3);
  EXPECT_DOUBLE_EQ(m.stragglers[0].persistence, 0.9);
  EXPECT_DOUBLE_EQ(load("persistent: [{rank: 5, delay: 1ms}]").stragglers[0].probability, 1.0);
  const sim::DelayModel both = load(
      "persistent: [{rank: 1, delay: 1ms, probability: 1}, {rank: 2, delay: 1ms, probability: "
      "0.5}]");
  EXPECT_DOUBLE_EQ(both.stragglers[1].probability, 0.5);
}

TEST(ConfigDelays, ProbabilityErrors) {
  for (const char* bad : {"1.5", "-0.1", "nan", ".nan", "NaN", "inf", "30%", "{a: 1}"}) {
    EXPECT_EQ(error_of(std::string("persistent: [{rank: 5, delay: 1ms, probability: ") + bad +
                       "}]")
                  .rfind("d.yaml:1:49: persistent[0].probability: must be a number in [0, 1]: "
                         "the share of steps in which the straggler is late (1: every step)",
                         0),
              0u)
        << bad;
  }
  // With a straggler late in every step, no probability can hold.
  EXPECT_EQ(error_of("persistent:\n"
                     "  - {rank: 1, delay: 1ms}\n"
                     "  - {rank: 2, delay: 1ms, probability: 0.3}\n"),
            "d.yaml:3:40: persistent[1].probability: a straggler late in a share of the steps "
            "cannot be given together with one late in every step (persistent[0], line 2, has no "
            "probability): any rank would then be late in every step; give every straggler a "
            "probability (1: every step), or none (value: 0.3)");
}

TEST(ConfigDelays, EveryDistributionKind) {
  for (const char* d : {"{distribution: none}", "{distribution: constant, value: 1ms}",
                        "{distribution: uniform, low: 1ms, high: 2ms}", "{distribution: normal, mean: 1ms, stddev: 1ms}",
                        "{distribution: lognormal, mu: -5, sigma: 0.5}", "{distribution: exponential, mean: 1ms}",
                        "{distribution: pareto, scale: 1ms, shape: 2.5}",
                        "{distribution: empirical, samples: [1ms, 2ms, 3ms]}"}) {
    EXPECT_NO_THROW(load(std::string("base: ") + d)) << d;
  }
}

TEST(ConfigDelays, Errors) {
  EXPECT_EQ(error_of("base: {distribution: gamma, k: 2}"),
            "d.yaml:1:22: base.distribution: unknown value 'gamma' (expected one of: none, constant, uniform, "
            "normal, lognormal, exponential, pareto, empirical)");
  EXPECT_EQ(error_of("base: {distribution: uniform, low: 1ms, hgih: 2ms}"),
            "d.yaml:1:41: base.hgih: unknown key 'hgih' (did you mean 'high'? allowed here: distribution, low, high)");
  EXPECT_EQ(error_of("base: {distribution: lognormal, mean: 9.5ms}"),
            "d.yaml:1:7: base: missing required key 'p90' (value: {distribution: lognormal, mean: 9.5ms})");
  EXPECT_EQ(error_of("base: {distribution: lognormal, mean: 9.5ms, p90: 5ms}").find("d.yaml:1:7: base: "), 0u);
  EXPECT_NE(error_of("base: {distribution: lognormal, mu: 1, mean: 2ms}").find("either by mu and sigma"),
            std::string::npos);
  EXPECT_NE(error_of("persistent: [{rank: 1, delay: 1ms, persistence: 1.5}]")
                .find("d.yaml:1:49: persistent[0].persistence: must be in [0, 1] (value: 1.5)"),
            std::string::npos)
      << error_of("persistent: [{rank: 1, delay: 1ms, persistence: 1.5}]");
  EXPECT_NE(error_of("persistent: [{rank: 1, delay: 1ms}, {rank: 1, delay: 2ms}]").find("listed twice"),
            std::string::npos);
  EXPECT_NE(error_of("persistent: [{rank: 1, delay: -1ms}]").find("must not be negative"), std::string::npos);
  EXPECT_NE(error_of("trace: delays/nope.csv").find("d.yaml:1:8: trace: file"), std::string::npos);
  EXPECT_NE(error_of("base: 1ms\ntrace: x.csv").find("give one of base and trace"), std::string::npos);
  EXPECT_NE(error_of("bass: 1ms").find("unknown key 'bass'"), std::string::npos);
}

}  // namespace
}  // namespace ssim::experiments
