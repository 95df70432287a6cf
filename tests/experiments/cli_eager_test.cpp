// The `eager` prediction policy (eager conditional execution) through the built binary: config
// keys and their errors, what simulate prints, and an experiment comparing it with oracle,
// previous and fixed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/ssim_eager_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kTop =
    "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
    "collective: {algorithm: stragglar, size: 64MiB}\n"
    "delays: {persistent: [{rank: 7, delay: 2ms}]}\n"
    "iterations: 2\n";

TEST(CliEager, SimulateSaysTheDetectionLatency) {
  const std::string yaml =
      write_temp("ok.yaml", kTop + "prediction: {policy: eager, detection: 25us}\n");
  const CommandResult r = run_cli("simulate " + yaml);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "prediction eager (detection 25")) << r.out;
  EXPECT_TRUE(contains(r.out, "prediction accuracy 100.0%")) << r.out;
  // The default: ceil(log2 8) = 3 rounds of the switch's route latency.
  const std::string dflt = write_temp("default.yaml", kTop + "prediction: {policy: eager}\n");
  const CommandResult d = run_cli("simulate " + dflt + " --json");
  ASSERT_EQ(d.rc, 0) << d.err;
  const CommandResult text = run_cli("simulate " + dflt);
  EXPECT_TRUE(contains(text.out, "prediction eager (detection ")) << text.out;
}

TEST(CliEager, BadDetectionIsAnErrorAtItsKey) {
  struct Case {
    std::string prediction, message;
  };
  for (const Case& c : {Case{"{policy: oracle, detection: 10us}", "detection is for policy eager"},
                        Case{"{policy: eager, detection: -1us}", "prediction.detection"},
                        Case{"{policy: eager, detection: 2s}", "detection must be in [0, 1s]"},
                        Case{"{policy: eager, detection: 10}", "prediction.detection"},
                        Case{"{policy: eagre}", "eager"}}) {
    const std::string yaml = write_temp("bad.yaml", kTop + "prediction: " + c.prediction + "\n");
    const CommandResult r = run_cli("simulate " + yaml);
    EXPECT_EQ(r.rc, 1) << c.prediction;
    EXPECT_TRUE(contains(r.err, c.message)) << c.prediction << ": " << r.err;
    EXPECT_TRUE(contains(r.err, yaml + ":5:")) << c.prediction << ": " << r.err;  // file:line
  }
}

// The four policies side by side on a persistent straggler: eager is right every time (as
// oracle) and costs its detection latency on top of oracle at most; the CSV and results.json
// name the policy and the detection.
TEST(CliEager, ExperimentAgainstOraclePreviousFixed) {
  const std::string dir = "/tmp/ssim_eager_out_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::string yaml =
      write_temp("exp.yaml",
                 "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                 "algorithms: [stragglar, ring]\n"
                 "size: 256MiB\n"
                 "stragglers: {count: 1, delay: 300us, persistence: 0.5}\n"
                 "prediction: {policy: oracle, rank: 7, detection: 50us}\n"
                 "iterations: 30\n"
                 "sweep: {policy: [oracle, previous, fixed, eager]}\n");
  const CommandResult r = run_cli("run " + yaml + " -o " + dir + " -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/results.json"));
  ASSERT_EQ(j["points"].size(), 4u);
  std::map<std::string, nlohmann::json> by_policy;
  for (const nlohmann::json& p : j["points"]) {
    by_policy[p["config"]["prediction"]["policy"].get<std::string>()] = p["summary"]["stragglar"];
  }
  ASSERT_EQ(by_policy.size(), 4u);
  EXPECT_DOUBLE_EQ(j["points"][3]["config"]["prediction"]["detection_s"].get<double>(), 50e-6);
  const double oracle = by_policy["oracle"]["mean_completion_s"].get<double>();
  const double eager = by_policy["eager"]["mean_completion_s"].get<double>();
  EXPECT_GT(eager, oracle);
  EXPECT_LE(eager, oracle + 50e-6 + 1e-12);
  EXPECT_DOUBLE_EQ(by_policy["eager"]["prediction_accuracy"].get<double>(), 1.0);
  EXPECT_LT(by_policy["fixed"]["prediction_accuracy"].get<double>(), 1.0);
  std::filesystem::remove_all(dir);
}

// The shipped configs load; eager_detection_8gpu runs: with no delay each detection latency is
// paid in full on top of detection 0 (which is oracle there), with a 5 ms delay none of them.
TEST(CliEager, ShippedExperiments) {
  const std::string dir = "/tmp/ssim_eager_shipped_" + std::to_string(::getpid());
  const std::string src = std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/experiments/";
  const CommandResult dry = run_cli("run " + src + "eager_8gpu.yaml --dry-run -o " + dir);
  ASSERT_EQ(dry.rc, 0) << dry.err;
  std::filesystem::remove_all(dir);
  const CommandResult r =
      run_cli("run " + src + "eager_detection_8gpu.yaml -o " + dir + " -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/results.json"));
  std::map<std::string, double> t;  // "detection delay" -> stragglar's time
  std::map<std::string, double> detection_s;
  for (const nlohmann::json& p : j["points"]) {
    const std::string d = p["values"]["prediction.detection"].get<std::string>();
    t[d + " " + p["values"]["delay"].get<std::string>()] =
        p["summary"]["stragglar"]["mean_completion_s"].get<double>();
    detection_s[d] = p["config"]["prediction"]["detection_s"].get<double>();
  }
  ASSERT_EQ(t.size(), 30u);
  for (const char* d : {"9us", "100us", "500us", "2ms"}) {
    EXPECT_GT(detection_s[d], 0) << d;
    EXPECT_NEAR(t[d + std::string(" 0")], t["0 0"] + detection_s[d], 1e-9) << d;
    EXPECT_NEAR(t[d + std::string(" 5ms")], t["0 5ms"], 1e-9) << d;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
