// Intermittent stragglers (`probability:` on a straggler, issue 43): simulate, run, advise, train
// and fit-delays take it; bad input names the file, line and key and exits 1; a config without
// it draws and writes exactly what it did before.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_yaml_support.hpp"

namespace ssim::testing {
namespace {

std::string temp(const std::string& name) { return temp_path("intermittent", name); }

CommandResult run_yaml(const std::string& command, const std::string& yaml,
                       const std::string& flags = "") {
  return run_yaml_file("intermittent", command, yaml, flags);
}

const std::string kSimulate = R"(topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
collective: {algorithm: ring, size: 1KiB}
delays:
  base: {distribution: exponential, mean: 200us}
  persistent: [{rank: 5, delay: {distribution: uniform, low: 3ms, high: 10ms}, persistence: 0.9, probability: 0.3}]
iterations: 400
seed: 7
)";

// simulate: the straggler is late in about 30% of the iterations, the JSON says so, and the
// iterations it is late in carry its delay on top of the same base draws.
TEST(CliIntermittent, SimulateLateInItsShare) {
  const CommandResult r = run_yaml("simulate", kSimulate, "--json --per-rank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["config"]["delays"]["stragglers"][0]["probability"].get<double>(), 0.3);
  int late = 0;
  for (const nlohmann::json& it : j["iterations"]) {
    double most = 0;
    for (const nlohmann::json& a : it["arrival_s"]) most = std::max(most, a.get<double>());
    late += most >= 3e-3;
  }
  EXPECT_NEAR(late, 120, 30);  // 400 x 0.3 +- 3.3 standard deviations
  // Without the key the JSON has none (files written before stay as they were).
  std::string every = kSimulate;
  every.replace(every.find(", probability: 0.3"), 18, "");
  const CommandResult e = run_yaml("simulate", every, "--json");
  ASSERT_EQ(e.rc, 0) << e.err;
  EXPECT_FALSE(contains(e.out, "probability")) << e.out;
}

// Bad input: one message naming the file, line and key; exit 1.
TEST(CliIntermittent, BadProbability) {
  for (const char* bad : {"1.5", "-0.2", ".nan", "nan"}) {
    std::string y = kSimulate;
    y.replace(y.find("probability: 0.3"), 16, std::string("probability: ") + bad);
    const CommandResult r = run_yaml("simulate", y);
    EXPECT_EQ(r.rc, 1) << bad;
    EXPECT_TRUE(contains(r.err, "config.yaml:5:")) << r.err;
    EXPECT_TRUE(contains(r.err, "delays.persistent[0].probability: must be a number in [0, 1]"))
        << r.err;
  }
  // A probability with a straggler late in every step (the stragglers section and a persistent
  // entry in a run experiment).
  const std::string exp = R"(name: t
topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
algorithms: [ring, stragglar]
size: 1MiB
delays: {persistent: [{rank: 2, delay: 1ms}]}
stragglers: {count: 1, delay: 5ms, probability: 0.3}
iterations: 10
)";
  const CommandResult r = run_yaml("run --dry-run", exp);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "config.yaml:6:"));
  EXPECT_TRUE(contains(r.err, "stragglers.probability: a straggler late in a share of the steps "
                              "cannot be given together with one late in every step "
                              "(delays.persistent[0], line 5"))
      << r.err;
  const CommandResult a = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --probability 0.3 -n 5");
  EXPECT_EQ(a.rc, 2);
  EXPECT_TRUE(contains(a.err, "--straggler-rank, --persistence and --probability describe the "
                              "straggler of --delay-dist, which is not given"))
      << a.err;
  const CommandResult n = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --delay-dist 5ms "
      "--probability nan -n 5");
  EXPECT_NE(n.rc, 0);
  EXPECT_TRUE(contains(n.err, "--probability")) << n.err;
}

// run: the stragglers section takes a probability and a sweep can vary it; a smaller
// probability costs Ring less.
TEST(CliIntermittent, RunSweepsTheProbability) {
  const std::string out = temp("run");
  const CommandResult r = run_yaml("run", R"(name: t
topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
algorithms: [ring, stragglar]
size: 64MiB
stragglers: {count: 1, delay: 5ms, probability: 0.5}
sweep: {probability: [0.1, 1]}
iterations: 200
)",
                                   "--no-plots --jobs 1 -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  const auto& points = j["points"];
  ASSERT_EQ(points.size(), 2u);
  const double rare = points[0]["summary"]["ring"]["mean_completion_s"].get<double>();
  const double always = points[1]["summary"]["ring"]["mean_completion_s"].get<double>();
  EXPECT_DOUBLE_EQ(points[0]["config"]["delays"]["stragglers"][0]["probability"].get<double>(),
                   0.1);
  EXPECT_LT(rare, always - 3e-3) << j.dump();
  std::filesystem::remove_all(out);
}

// advise: --probability, and --policy ranking algorithm x policy pairs on the same arrivals.
TEST(CliIntermittent, AdviseProbabilityAndPolicyPairs) {
  const CommandResult r = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 256MiB --delay-dist 5ms "
      "--probability 0.3 --policy previous,adaptive,eager --algorithms ring,rhd,stragglar "
      "-n 60 --jobs 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "persistence 1 probability 0.3]")) << r.out;
  EXPECT_TRUE(contains(r.out, "prediction previous, adaptive, eager;")) << r.out;
  for (const char* label : {" stragglar (previous) ", " stragglar (adaptive) ",
                            " stragglar (eager) ", " ring ", " rhd "})
    EXPECT_TRUE(contains(r.out, label)) << label << "\n" << r.out;
  for (const char* pair : {"ring (previous)", "ring (adaptive)", "rhd (eager)"})
    EXPECT_FALSE(contains(r.out, pair)) << r.out;  // a baseline ignores the policy: once
  // One policy: adaptive alone is accepted and named.
  const CommandResult one = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 256MiB --delay-dist 5ms "
      "--policy adaptive --fallback ring,rhd --algorithms ring,stragglar -n 20 --jobs 1");
  ASSERT_EQ(one.rc, 0) << one.err;
  EXPECT_TRUE(contains(one.out, "; prediction adaptive; ")) << one.out;
  const CommandResult bad = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --policy previous,psychic");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_TRUE(contains(bad.err, "--policy: unknown policy 'psychic'")) << bad.err;
  const CommandResult fb = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --fallback rhd");
  EXPECT_EQ(fb.rc, 2);
  EXPECT_TRUE(contains(fb.err, "--fallback is for --policy adaptive")) << fb.err;
}

// fit-delays recovers the probability of a log simulated with one, what it writes feeds advise
// and train (--probability overrides it there).
TEST(CliIntermittent, FitDelaysRecoversTheProbability) {
  const CommandResult sim = run_yaml("simulate", kSimulate, "--json --per-rank");
  ASSERT_EQ(sim.rc, 0) << sim.err;
  const nlohmann::json j = nlohmann::json::parse(sim.out);
  const std::string log = temp("steps.csv"), fitted = temp("fitted.yaml");
  {
    std::ofstream csv(log);
    csv << "rank,step,seconds\n";
    for (std::size_t s = 0; s < j["iterations"].size(); ++s) {
      const nlohmann::json& a = j["iterations"][s]["arrival_s"];
      for (std::size_t r = 0; r < a.size(); ++r) csv << r << ',' << s << ',' << 0.1 + a[r].get<double>() << '\n';
    }
  }
  const CommandResult f = run_cli("fit-delays " + log + " -o " + fitted);
  ASSERT_EQ(f.rc, 0) << f.err;
  const std::string y = slurp(fitted);
  EXPECT_TRUE(contains(y, "persistent:\n  - {rank: 5, delay: {distribution: uniform, low: ")) << y;
  const std::size_t p = y.find("probability: ");
  ASSERT_NE(p, std::string::npos) << y;
  EXPECT_NEAR(std::stod(y.substr(p + 13)), 0.3, 0.05) << y;
  const std::size_t q = y.find("persistence: ");
  EXPECT_NEAR(std::stod(y.substr(q + 13)), 0.9, 0.07) << y;
  EXPECT_TRUE(contains(y, "#   late: in ")) << y;
  const CommandResult a =
      run_cli("advise --topology switch:450GiB/s:3us --ranks 8 --size 64MiB --delays " + fitted +
              " -n 20 --algorithms ring,stragglar --jobs 1");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_TRUE(contains(a.out, " probability 0.")) << a.out;
  std::remove(log.c_str());
  std::remove(fitted.c_str());
}

TEST(CliIntermittent, TrainTakesAndOverridesTheProbability) {
  const std::string job = R"(topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring]
delays: {persistent: [{rank: 2, delay: 20ms, probability: 0.25}]}
workload:
  model: {params: 4000000, forward: 5ms, backward: 10ms}
  bucket_cap: 8MiB
steps: 400
seed: 7
)";
  const CommandResult r = run_yaml("train", job, "--json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const double some = nlohmann::json::parse(r.out)["runs"][0]["mean_step_s"].get<double>();
  const CommandResult all = run_yaml("train", job, "--json --probability 1");
  ASSERT_EQ(all.rc, 0) << all.err;
  const double every = nlohmann::json::parse(all.out)["runs"][0]["mean_step_s"].get<double>();
  // 20 ms in a quarter of the steps against every step: about 15 ms less per step.
  EXPECT_NEAR(every - some, 15e-3, 3e-3) << some << " " << every;
  const CommandResult bad = run_yaml("train", job, "--probability 2");
  EXPECT_NE(bad.rc, 0);
  EXPECT_TRUE(contains(bad.err, "--probability")) << bad.err;
}

}  // namespace
}  // namespace ssim::testing
