// The peers' baselines added for issue 16 through the built binary: rhd's Rabenseifner-Traff
// elimination (option nonpow2) and straggler_tree, the tree the straggler joins last.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "algorithms/cost_model.hpp"
#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

TEST(CliPeerBaselines, RhdRabenseifnerVerifiesAndBadValuesAreErrors) {
  for (const char* n : {"3", "6", "13", "100"}) {
    const CommandResult gen = run_cli(std::string("schedule rhd --ranks ") + n +
                                      " --option nonpow2=rabenseifner --format json");
    ASSERT_EQ(gen.rc, 0) << gen.err;
    const CommandResult ver = run_cli("verify -", gen.out);
    EXPECT_EQ(ver.rc, 0) << n << ": " << ver.err;
    EXPECT_TRUE(contains(ver.out, "ok: rhd is a correct allreduce")) << ver.out;
  }
  const CommandResult text = run_cli("schedule rhd --ranks 6 --option nonpow2=rabenseifner");
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "R0 fold: 0>1 c2..3+ | 1>0 c0..1+ | 2>3 c2..3+ | 3>2 c0..1+"))
      << text.out;
  const CommandResult bad = run_cli("schedule rhd --ranks 6 --option nonpow2=traff");
  EXPECT_NE(bad.rc, 0);
  EXPECT_TRUE(contains(bad.err, "nonpow2=traff: expected fold or rabenseifner")) << bad.err;
}

// Listed, verified for a straggler in the middle, and simulated: with the straggler 5 ms late on
// the paper's switch (route latency 3 us, 450 GiB/s) the time after it arrives is the closed
// form's exchange plus the tree broadcast among the 6 others.
TEST(CliPeerBaselines, StragglerTree) {
  const CommandResult list = run_cli("algorithms");
  ASSERT_EQ(list.rc, 0);
  EXPECT_TRUE(contains(list.out, "straggler_tree  (n >= 2)")) << list.out;
  const CommandResult gen =
      run_cli("schedule straggler_tree --ranks 7 --straggler 2 --format json");
  ASSERT_EQ(gen.rc, 0) << gen.err;
  const CommandResult ver = run_cli("verify -", gen.out);
  EXPECT_EQ(ver.rc, 0) << ver.err;

  const std::string yaml = "/tmp/ssim_straggler_tree_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(yaml) << "topology: {kind: switch, ranks: 7, bandwidth: 450GiB/s, latency: 3us}\n"
                         "collective: {algorithm: straggler_tree, size: 64MiB}\n"
                         "delays: {persistent: [{rank: 2, delay: 5ms}]}\n"
                         "prediction: {policy: oracle}\n";
  const CommandResult r = run_cli("simulate " + yaml + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const double want = alg::straggler_tree_ideal_cost(
      7, 64.0 * (1 << 20), 16, alg::CostParams{3e-6, 1.0 / (450.0 * (1 << 30)), 0.0});
  EXPECT_NEAR(j["mean_after_last_arrival_s"].get<double>(), want, 1e-9 * want);
  std::remove(yaml.c_str());
}

}  // namespace
}  // namespace ssim::testing
