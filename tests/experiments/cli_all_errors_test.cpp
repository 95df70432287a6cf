// Every YAML error of a file in one run (issue 43): for each kind of config (simulate config,
// run experiment, topology file, train job, advise --delays file; a custom topology's nodes
// and links, a workload file, a calibrated topology's provenance) a file with errors, on
// lines 4, 5 and 9 (an unknown key with a suggestion, a value out of range, a value of the
// wrong type), gets all three, in line order, each exactly as it reads when it is the file's
// only error; the list is capped; exit 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "cli_yaml_support.hpp"

namespace ssim::testing {
namespace {

struct BadLine {
  int line;          // 1-based line of the template
  std::string bad;   // the line with its error
  std::string good;  // the same line without it
  std::string says;  // a piece of the error's message
};

// The template's lines of `errors` made bad where `bad` says so, good elsewhere.
std::string compose(const std::string& text, const std::vector<BadLine>& errors,
                    const std::vector<bool>& bad) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    lines.at(static_cast<std::size_t>(errors[i].line - 1)) =
        bad[i] ? errors[i].bad : errors[i].good;
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// stderr's message without the "stragglesim: error: " of its first line.
std::string message(const std::string& err) {
  const std::string prefix = "stragglesim: error: ";
  EXPECT_EQ(err.compare(0, prefix.size(), prefix), 0) << err;
  return err.compare(0, prefix.size(), prefix) == 0 ? err.substr(prefix.size()) : err;
}

// Runs `run(yaml)` on the file with all errors and with each one alone, and with none (which
// must pass: the three are the only problems).
template <typename Run>
void expect_all_errors(const std::string& lines, const std::vector<BadLine>& errors, Run run) {
  const std::vector<bool> none(errors.size(), false);
  const CommandResult good = run(compose(lines, errors, none));
  ASSERT_EQ(good.rc, 0) << good.err;
  std::string expected;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    std::vector<bool> one = none;
    one[i] = true;
    const CommandResult alone = run(compose(lines, errors, one));
    ASSERT_EQ(alone.rc, 1) << alone.err;
    const std::string m = message(alone.err);
    // One error: one line (what it always was), at its line, saying what it says.
    EXPECT_EQ(m.find('\n'), m.size() - 1) << m;
    EXPECT_TRUE(contains(m, ":" + std::to_string(errors[i].line) + ":")) << m;
    EXPECT_TRUE(contains(m, errors[i].says)) << m;
    expected += m;
  }
  const CommandResult all = run(compose(lines, errors, std::vector<bool>(errors.size(), true)));
  EXPECT_EQ(all.rc, 1);
  EXPECT_EQ(message(all.err), expected) << all.err;
}

CommandResult run_yaml(const std::string& command, const std::string& yaml,
                       const std::string& flags = "") {
  return run_yaml_file("allerrors", command, yaml, flags);
}

TEST(CliAllErrors, SimulateConfig) {
  expect_all_errors(
      R"(# a simulate config with three errors
topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
collective: {algorithm: ring, size: 1MiB}
iterations: 3
seed: 7
delays:
  persistent:
    - rank: 1
      delay: 2ms
)",
      {{4, "itertions: 3", "iterations: 3", "unknown key 'itertions' (did you mean 'iterations'?"},
       {5, "seed: -7", "seed: 7", "seed: must be in [0, "},
       {9, "      delay: [2ms]", "      delay: 2ms",
        "delays.persistent[0].delay: expected a mapping"}},
      [](const std::string& yaml) { return run_yaml("simulate", yaml); });
}

TEST(CliAllErrors, RunExperiment) {
  const std::string out = temp_path("allerrors", "out");
  expect_all_errors(
      R"(# a run experiment with three errors
topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}
algorithms: [ring, rhd]
metric: completion
iterations: 2
size: 1MiB
stragglers:
  delay: 1ms
  count: 2
)",
      {{4, "metirc: completion", "metric: completion",
        "unknown key 'metirc' (did you mean 'metric'?"},
       {5, "iterations: 0", "iterations: 2", "iterations: must be in [1, 10000000]"},
       {9, "  count: two", "  count: 2", "stragglers.count: expected an integer"}},
      [&out](const std::string& yaml) {
        const CommandResult r = run_yaml("run", yaml, "-q --no-plots -o " + out);
        std::error_code ec;
        std::filesystem::remove_all(out, ec);  // what this run wrote, under this test's name
        return r;
      });
}

TEST(CliAllErrors, TopologyFile) {
  const std::string topo = temp_path("allerrors", "topo.yaml");
  expect_all_errors(
      R"(# a topology file with three errors
kind: switch
latency: 3us
ecmp: false
ranks: 8
name: test switch
description: a switch
# the links into the switch
bandwidth: 450GiB/s
)",
      {{4, "ecpm: false", "ecmp: false",
        "unknown key 'ecpm' for a switch topology (did you mean 'ecmp'?"},
       {5, "ranks: 1", "ranks: 8", "ranks: must be in [2, "},
       {9, "bandwidth: {value: 450GiB/s}", "bandwidth: 450GiB/s",
        "bandwidth: expected a scalar with a unit"}},
      [&topo](const std::string& yaml) {
        std::ofstream(topo) << yaml;
        const CommandResult r = run_yaml(
            "simulate", "topology: " + topo + "\ncollective: {algorithm: ring, size: 1MiB}\n");
        std::remove(topo.c_str());
        return r;
      });
}

TEST(CliAllErrors, TrainJob) {
  expect_all_errors(
      R"(# a training job with three errors
topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring]
steps: 5
seed: 3
workload:
  model: {params: 4000000, forward: 5ms, backward: 10ms}
  bucket_cap: 8MiB
  samples_per_gpu: 2
)",
      {{4, "stpes: 5", "steps: 5", "unknown key 'stpes' (did you mean 'steps'?"},
       {5, "seed: -3", "seed: 3", "seed: must be in [0, "},
       {9, "  samples_per_gpu: many", "  samples_per_gpu: 2",
        "workload.samples_per_gpu: expected an integer"}},
      [](const std::string& yaml) { return run_yaml("train", yaml); });
}

TEST(CliAllErrors, AdviseDelaysFile) {
  const std::string delays = temp_path("allerrors", "delays.yaml");
  expect_all_errors(
      R"(# a delays file (advise --delays) with three errors
base: {distribution: exponential, mean: 50us}
persistent:
  - {rank: 1, delay: 2ms, persistence: 0.5}
  - {rank: 2, delay: 2ms, persistence: 0.5}
  - delay: 2ms
    persistence: 0.5
    # the third straggler's rank
    rank: 3
)",
      {{4, "  - {rank: 1, delay: 2ms, persistance: 0.5}",
        "  - {rank: 1, delay: 2ms, persistence: 0.5}",
        "persistent[0].persistance: unknown key 'persistance' (did you mean 'persistence'?"},
       {5, "  - {rank: 2, delay: 2ms, persistence: 1.5}",
        "  - {rank: 2, delay: 2ms, persistence: 0.5}",
        "persistent[1].persistence: must be in [0, 1]"},
       {9, "    rank: three", "    rank: 3", "persistent[2].rank: expected an integer"}},
      [&delays](const std::string& yaml) {
        std::ofstream(delays) << yaml;
        const CommandResult r = run_cli(
            "advise --topology switch:450GiB/s:3us --ranks 8 --size 1MiB --iterations 2 --delays " +
            delays);
        std::remove(delays.c_str());
        return r;
      });
}

// A custom topology: a node's error, and a link's; a link to a node with an error is not
// reported a second time (sw's typo on line 6 leaves the link of line 8 to it unchecked, not
// "unknown node 'sw'").
TEST(CliAllErrors, CustomTopologyNodesAndLinks) {
  const std::string topo = temp_path("allerrors", "custom.yaml");
  expect_all_errors(
      R"(# a custom topology with four errors
kind: custom
nodes:
  - {name: g0}
  - {name: g1}
  - {name: sw, type: switch}
links:
  - {from: g0, to: sw, bandwidth: 100GB/s, latency: 1us}
  - {from: g1, to: sw, bandwidth: 100GB/s, latency: 1us}
)",
      {{4, "  - {name: g0, typ: gpu}", "  - {name: g0}",
        "nodes[0].typ: unknown key 'typ' (did you mean 'type'?"},
       {6, "  - {name: sw, type: swich}", "  - {name: sw, type: switch}",
        "nodes[2].type: unknown value 'swich' (did you mean 'switch'?"},
       {8, "  - {from: g0, to: sw, bandwidth: fast, latency: 1us}",
        "  - {from: g0, to: sw, bandwidth: 100GB/s, latency: 1us}", "links[0].bandwidth: "},
       {9, "  - {from: g1, to: g9, bandwidth: 100GB/s, latency: 1us}",
        "  - {from: g1, to: sw, bandwidth: 100GB/s, latency: 1us}",
        "links[1].to: unknown node 'g9' (declare it under nodes)"}},
      [&topo](const std::string& yaml) {
        std::ofstream(topo) << yaml;
        const CommandResult r = run_yaml(
            "simulate", "topology: " + topo + "\ncollective: {algorithm: ring, size: 1MiB}\n");
        std::remove(topo.c_str());
        return r;
      });
}

// advise --workload FILE (`workload: {file: ...}`): the workload section's errors, its model's
// and its layers'.
TEST(CliAllErrors, WorkloadFile) {
  const std::string job = temp_path("allerrors", "job.yaml");
  expect_all_errors(
      R"(# a workload file with three errors
workload:
  samples_per_gpu: 2
  bucket_cap: 8MiB
  optimizer: 1ms
  model:
    layers:
      - {name: a, params: 10000000, forward: 1ms}
      - {name: b, params: 10000000, forward: 2ms}
)",
      {{4, "  bucket_cpa: 8MiB", "  bucket_cap: 8MiB",
        "workload.bucket_cpa: unknown key 'bucket_cpa' (did you mean 'bucket_cap'?"},
       {5, "  optimizer: soon", "  optimizer: 1ms", "workload.optimizer: "},
       {9, "      - {name: b, params: 10000000, forward: 0ms}",
        "      - {name: b, params: 10000000, forward: 2ms}",
        "workload.model.layers[1].forward: forward must be > 0"}},
      [&job](const std::string& yaml) {
        std::ofstream(job) << yaml;
        const CommandResult r = run_cli(
            "advise --topology switch:100GB/s:3us --ranks 4 --iterations 2 --algorithms ring,rhd "
            "--workload " + job);
        std::remove(job.c_str());
        return r;
      });
}

// validate --topology: a calibrated topology's provenance values, its reduce cost
// (provenance.gamma, which validate reads) among them, with the topology's own errors.
TEST(CliAllErrors, CalibratedTopologyProvenance) {
  const std::string topo = temp_path("allerrors", "calibrated.yaml");
  expect_all_errors(
      R"(# a calibrated topology with four errors
kind: switch
ranks: 4
bandwidth: 100GB/s
latency: 1us
provenance:
  machine: "node 7"
  date: "2026-11-29"
  gamma: 0.1ns/B
)",
      {{4, "bandwith: 100GB/s", "bandwidth: 100GB/s",
        "unknown key 'bandwith' for a switch topology (did you mean 'bandwidth'?"},
       {7, "  machine: [node, 7]", "  machine: \"node 7\"",
        "provenance.machine: expected a string"},
       {8, "  date: {day: 29}", "  date: \"2026-11-29\"", "provenance.date: expected a string"},
       {9, "  gamma: 0.1ns", "  gamma: 0.1ns/B", "provenance.gamma: "}},
      [&topo](const std::string& yaml) {
        std::ofstream(topo) << yaml;
        const CommandResult r = run_cli("validate " +
                                        data_path("calibration/ring4_measured.csv") +
                                        " --topology " + topo);
        std::remove(topo.c_str());
        return r;
      });
}

// A typo nested in the topology (line 3) is listed before one at the top level (line 4),
// although the top-level keys are checked first; errors of an included topology file follow
// those of the config (by file, in the order first met).
TEST(CliAllErrors, LineOrderAcrossSections) {
  const CommandResult r = run_yaml("simulate", R"(collective: {algorithm: ring, size: 1MiB}
topology:
  {kind: switch, ranks: 8, bandwidth: 450GiB/s, latnecy: 3us}
itertions: 3
)");
  EXPECT_EQ(r.rc, 1);
  const std::string m = message(r.err);
  const auto nested = m.find(":3:");
  const auto top = m.find(":4:1: itertions: unknown key 'itertions'");
  ASSERT_NE(nested, std::string::npos) << m;
  ASSERT_NE(top, std::string::npos) << m;
  EXPECT_LT(nested, top) << m;
  EXPECT_TRUE(contains(m, "unknown key 'latnecy' for a switch topology (did you mean 'latency'?"))
      << m;
}

// At most 20 errors are listed, then how many more there are.
TEST(CliAllErrors, Cap) {
  std::string yaml =
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "collective: {algorithm: ring, size: 1MiB}\n";
  for (int i = 0; i < 25; ++i) yaml += "unknown_" + std::to_string(i) + ": 1\n";
  const CommandResult r = run_yaml("simulate", yaml);
  EXPECT_EQ(r.rc, 1);
  std::istringstream in(message(r.err));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 21u) << r.err;
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(contains(lines[i], ":" + std::to_string(i + 3) + ":1: unknown_" +
                                       std::to_string(i) + ": unknown key 'unknown_" +
                                       std::to_string(i) + "'"))
        << lines[i];
  }
  EXPECT_EQ(lines[20], "... and 5 more errors (25 in all; fix these and run again)");
}

}  // namespace
}  // namespace ssim::testing
