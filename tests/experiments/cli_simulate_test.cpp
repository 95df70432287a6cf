#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "tests/sim/trace_check.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Writes `yaml` to a temporary file and runs `simulate` on it with `flags`.
CommandResult simulate(const std::string& yaml, const std::string& flags = "") {
  const std::string path = "/tmp/ssim_sim_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << yaml;
  CommandResult r = run_cli("simulate " + path + " " + flags);
  std::remove(path.c_str());
  return r;
}

const std::string kTopology = "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n";

// Every shipped simulate config, traced on its first and on a later iteration (other arrivals),
// gives a trace that Perfetto imports without dropping a slice.
TEST(CliSimulate, EveryShippedConfigTracesCleanly) {
  const std::filesystem::path dir = std::filesystem::path(STRAGGLESIM_SOURCE_DIR) / "configs/simulate";
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    for (const char* iteration : {"0", "1"}) {
      const std::string trace = "/tmp/ssim_shipped_trace_" + std::to_string(::getpid()) + ".json";
      const CommandResult r = run_cli("simulate " + entry.path().string() + " --iterations 2 --trace " + trace +
                                      " --trace-iteration " + iteration);
      ASSERT_EQ(r.rc, 0) << entry.path() << ": " << r.err;
      SCOPED_TRACE(entry.path().string() + " iteration " + iteration);
      const TraceCounts c = check_trace_strict(slurp(trace));
      EXPECT_GT(c.slices, 0u);
      EXPECT_GT(c.flows, 0u);
      std::remove(trace.c_str());
    }
    ++configs;
  }
  EXPECT_GE(configs, 2);
}

TEST(CliSimulate, IssueExampleRunsAndPrintsJson) {
  const CommandResult r = simulate(kTopology +
                                   "network: {model: alphabeta}\n"
                                   "collective: {algorithm: ring, size: 1GiB}\n"
                                   "delays: {persistent: [{rank: 7, delay: 10ms}]}\n"
                                   "iterations: 3\nseed: 1\n",
                                   "--json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["iterations"].size(), 3u);
  // Ring waits for the straggler: after it arrives, 14 rounds of (3us + 2^27 B / 450 GiB/s)
  // = 14 * (3e-6 + 1/3600 s) = 3.9309 ms (paper table: 3.931 ms).
  const double step = 3e-6 + 1.0 / 8 / 450;
  EXPECT_NEAR(j["iterations"][0]["after_last_arrival_s"].get<double>(), 14 * step, 1e-12);
  EXPECT_NEAR(j["iterations"][0]["completion_s"].get<double>(), 10e-3 + 14 * step, 1e-12);
  EXPECT_NEAR(j["mean_after_last_arrival_s"].get<double>(), 14 * step, 1e-12);
  EXPECT_EQ(j["config"]["seed"], "1");  // 64-bit seeds as strings
  ASSERT_FALSE(j["links"].empty());
  for (const auto& link : j["links"]) EXPECT_TRUE(link["bytes"].is_number_integer()) << link;
}

TEST(CliSimulate, PerRankTimes) {
  const CommandResult r = simulate(kTopology +
                                   "collective: {algorithm: ring, size: 1GiB}\n"
                                   "delays: {persistent: [{rank: 7, delay: 10ms}]}\n",
                                   "--json --per-rank");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto it = nlohmann::json::parse(r.out)["iterations"][0];
  ASSERT_EQ(it["finish_s"].size(), 8u);
  EXPECT_DOUBLE_EQ(it["arrival_s"][7].get<double>(), 10e-3);
  EXPECT_DOUBLE_EQ(it["arrival_s"][0].get<double>(), 0.0);
  // Every rank of a ring takes part in the last round, so all finish together.
  EXPECT_NEAR(it["finish_s"][0].get<double>(), it["completion_s"].get<double>(), 1e-12);
  EXPECT_FALSE(nlohmann::json::parse(simulate(kTopology + "collective: {algorithm: ring, size: 1GiB}\n", "--json").out)
                   ["iterations"][0]
                       .contains("finish_s"));
  // Without --json there is nowhere to print them: a usage error naming the flag.
  const CommandResult table =
      simulate(kTopology + "collective: {algorithm: ring, size: 1GiB}\n", "--per-rank");
  EXPECT_EQ(table.rc, 2);
  EXPECT_TRUE(contains(table.err, "stragglesim: error: --per-rank needs --json")) << table.err;
  EXPECT_TRUE(table.out.empty()) << table.out;
}

TEST(CliSimulate, TableAndTrace) {
  const std::string trace = "/tmp/ssim_trace_" + std::to_string(::getpid()) + ".json";
  const CommandResult r =
      simulate(kTopology + "collective: {algorithm: ring, size: 64MiB}\n", "--trace " + trace);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ring on switch(8)")) << r.out;
  EXPECT_TRUE(contains(r.out, "mean")) << r.out;
  const auto t = nlohmann::json::parse(slurp(trace));
  EXPECT_GT(t["traceEvents"].size(), 100u);
  std::remove(trace.c_str());
}

TEST(CliSimulate, SameSeedSameResults) {
  const std::string yaml = kTopology +
                           "collective: {algorithm: ring, size: 16MiB}\n"
                           "delays: {base: {distribution: lognormal, mean: 9.5ms, p90: 18.8ms}}\n"
                           "iterations: 5\nseed: 7\n";
  const CommandResult a = simulate(yaml, "--json"), b = simulate(yaml, "--json");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const CommandResult c = simulate(yaml, "--json --seed 8");
  EXPECT_NE(a.out, c.out);
}

TEST(CliSimulate, InvalidFieldsNameFileLineKeyAndValue) {
  struct Case {
    std::string yaml;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {kTopology + "collective: {algorithm: rung, size: 1GiB}\n", ":2:25: collective.algorithm: unknown algorithm 'rung'"},
      {kTopology + "collective: {algorithm: ring, size: 1Gib}\n", ":2:37: collective.size: invalid size '1Gib'"},
      {kTopology + "collective: {algorithm: ring, size: 0}\n", "collective.size: size must be > 0"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB, options: {segments: 4}}\n",
       "collective.options.segments: algorithm ring has no option 'segments'"},
      {kTopology + "collective: {algorithm: direct, size: 1GiB, options: {straggler: 8}}\n",
       "collective.options.straggler: must be in [0, 7] (value: 8)"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\nnetwork: {model: packet}\n",
       ":3:18: network.model: unknown value 'packet' (expected one of: alphabeta, flow)"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\nnetwork: {model: flow, gamma: -1ns/B}\n",
       "network.gamma: invalid per-byte cost '-1ns/B': must not be negative"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\ndelays: {persistent: [{rank: 9, delay: 1ms}]}\n",
       "delays.persistent[0].rank: must be in [0, 7] (value: 9)"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\niterations: 0\n", ":3:13: iterations: must be in"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\nseed: abc\n", "seed: expected an integer (value: abc)"},
      {kTopology + "algorithms: [ring, rhd]\nsize: 1GiB\n",
       ":2:13: algorithms: this is a `run` experiment (1 point, 2 algorithms): use `stragglesim run"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\nprediction: {policy: psychic}\n",
       "prediction.policy: unknown value 'psychic'"},
      {kTopology + "collective: {algorithm: ring, size: 1GiB}\nitertions: 3\n", ":3:1: itertions: unknown key"},
      {"topology: {kind: switch, ranks: 8, bandwidth: -5GB/s, latency: 3us}\n"
       "collective: {algorithm: ring, size: 1GiB}\n",
       ":1:47: topology.bandwidth: invalid bandwidth '-5GB/s': must be > 0"},
      {"collective: {algorithm: ring, size: 1GiB}\n", "(top level): missing required key 'topology'"},
      {"topology: {kind: switch, ranks: 8, bandwidth: 5GB/s, latency: 3us\n", "malformed YAML"},
  };
  for (const Case& c : cases) {
    const CommandResult r = simulate(c.yaml);
    EXPECT_EQ(r.rc, 1) << c.yaml;
    EXPECT_TRUE(contains(r.err, c.expect)) << "expected: " << c.expect << "\ngot: " << r.err;
    EXPECT_TRUE(contains(r.err, "/tmp/ssim_sim_")) << r.err;  // names the file
  }
}

TEST(CliSimulate, MissingFileAndBadFlags) {
  CommandResult r = run_cli("simulate /nonexistent.yaml");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "/nonexistent.yaml: cannot open file")) << r.err;
  r = simulate(kTopology + "collective: {algorithm: ring, size: 1GiB}\n", "--trace /tmp/x.json --trace-iteration 3");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "--trace-iteration 3 is past the last iteration (0)")) << r.err;
}

// A network written for ASTRA-sim, read as it is: ring AllReduce on its 1-D Ring of 8 NPUs at
// 50 GB/s (2^30 B/s, as ASTRA-sim converts) and 500 ns per hop is 2(n-1) neighbour steps of
// 500 ns + (64 MiB / 8) / (50 x 2^30 B/s) = 14 x 156.75 us = 2.1945 ms, ASTRA-sim's
// congestion-unaware cost of the same steps.
TEST(CliSimulate, AnAstraSimNetworkFile) {
  const std::string dir = ::testing::TempDir() + "cli_astra_sim_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/network.yml")
      << "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n";
  std::ofstream(dir + "/sim.yaml") << "topology: {astra_sim: network.yml}\n"
                                      "network: {model: alphabeta}\n"
                                      "collective: {algorithm: ring, size: 64MiB}\n"
                                      "iterations: 1\n";
  const CommandResult r = run_cli("simulate " + dir + "/sim.yaml --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j.at("mean_completion_s").get<double>(), 14 * (500e-9 + 8388608 / (50.0 * (1 << 30))),
              1e-12);
  // A missing network file: one message naming the config's line and key.
  std::ofstream(dir + "/bad.yaml") << "topology: {astra_sim: missing.yml}\n"
                                      "network: {model: alphabeta}\n"
                                      "collective: {algorithm: ring, size: 64MiB}\n";
  const CommandResult bad = run_cli("simulate " + dir + "/bad.yaml");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "bad.yaml:1")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "astra_sim")) << bad.err;
  std::filesystem::remove_all(dir);
}

// The shipped SimGrid platform (configs/simulate/simgrid_platform.yaml) and the same network
// written as a stragglesim custom topology simulate to the same time, bit for bit; bad XML is one
// message naming the platform file's line, exit 1.
TEST(CliSimulate, ASimGridPlatformFile) {
  const std::string configs = std::string(STRAGGLESIM_SOURCE_DIR) + "/configs";
  const CommandResult xml =
      run_cli("simulate " + configs + "/simulate/simgrid_platform.yaml --json");
  ASSERT_EQ(xml.rc, 0) << xml.err;
  const std::string dir = ::testing::TempDir() + "cli_simgrid_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/twin.yaml") << "topology: {file: " << configs
                                    << "/topologies/simgrid/two_leaves_8hosts.yaml}\n"
                                       "network: {model: flow}\n"
                                       "collective: {algorithm: stragglar, size: 64MiB}\n"
                                       "delays: {persistent: [{rank: 5, delay: 1ms}]}\n"
                                       "iterations: 1\nseed: 1\n";
  const CommandResult yaml = run_cli("simulate " + dir + "/twin.yaml --json");
  ASSERT_EQ(yaml.rc, 0) << yaml.err;
  const double a = nlohmann::json::parse(xml.out).at("mean_completion_s").get<double>();
  const double b = nlohmann::json::parse(yaml.out).at("mean_completion_s").get<double>();
  EXPECT_EQ(a, b);
  EXPECT_GT(a, 1e-3);  // the 1 ms straggler and 64 MiB over 12.5 GB/s links
  std::ofstream(dir + "/bad.xml") << "<?xml version='1.0'?>\n<platform version=\"4.1\">\n"
                                     "<zone id=\"z\" routing=\"Floyd\">\n</zone>\n</platform>\n";
  std::ofstream(dir + "/bad.yaml") << "topology: bad.xml\nnetwork: {model: flow}\n"
                                      "collective: {algorithm: ring, size: 1MiB}\n";
  const CommandResult bad = run_cli("simulate " + dir + "/bad.yaml");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "bad.xml:3: <zone>: routing=\"Floyd\"")) << bad.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
