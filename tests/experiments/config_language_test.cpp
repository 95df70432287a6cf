// One config language for `simulate` and `run` (docs/user_guide.md#one-config-language):
// simulate reads one point of an experiment with the run loader, keeps its `collective:` form,
// and each command names the other for a file that is not its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_support.hpp"
#include "common/error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/output/experiment_output.hpp"
#include "experiments/runner/experiment.hpp"

namespace ssim::experiments {
namespace {

using ssim::testing::CommandResult;
using ssim::testing::run_cli;
using ssim::testing::slurp;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

#define EXPECT_HAS(text, what) \
  EXPECT_TRUE(contains(text, what)) << "expected \"" << (what) << "\" in: " << (text)

sim::SimulationConfig simulation(const std::string& yaml) {
  return load_simulation_config(ConfigReader::from_string(yaml, "sim.yaml"));
}

std::string simulate_error(const std::string& yaml) {
  try {
    simulation(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string run_error(const std::string& yaml) {
  try {
    load_experiment(ConfigReader::from_string(yaml, "exp.yaml"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The resolved configuration as simulate prints it, without the seed (a swept value changes
// the point's seed, by design).
nlohmann::json resolved(const sim::SimulationConfig& c) {
  nlohmann::json j = simulation_config_json(c);
  j.erase("seed");
  return j;
}

const std::string kSwitch =
    "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n";

std::string source(const std::string& relative) {
  return std::string(STRAGGLESIM_SOURCE_DIR) + "/" + relative;
}

// A file of the temporary folder, removed with it.
class ConfigLanguageCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ssim_lang_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

// The simulate form and its run-form twin: the same JSON from `simulate` (but the file name),
// and `run` of the twin times every iteration the same.
TEST_F(ConfigLanguageCli, SimulateFormAndRunFormTwinGiveTheSameResults) {
  const std::string sim =
      file("sim.yaml", kSwitch +
                           "collective: {algorithm: stragglar, size: 16MiB}\n"
                           "delays:\n"
                           "  base: {distribution: exponential, mean: 50us}\n"
                           "  persistent: [{rank: 7, delay: {distribution: "
                           "lognormal, mean: 2ms, p90: 4ms}, persistence: 0.8}]\n"
                           "prediction: {policy: previous}\n"
                           "iterations: 6\nseed: 3\n");
  const std::string twin =
      file("twin.yaml", kSwitch +
                            "algorithms: [stragglar]\nsize: 16MiB\n"
                            "delays: {base: {distribution: exponential, mean: 50us}}\n"
                            "stragglers: {ranks: [7], delay: {distribution: "
                            "lognormal, mean: 2ms, p90: 4ms}, persistence: 0.8}\n"
                            "prediction: {policy: previous}\n"
                            "iterations: 6\nseed: 3\n");
  const CommandResult a = run_cli("simulate " + sim + " --json");
  const CommandResult b = run_cli("simulate " + twin + " --json");
  ASSERT_EQ(a.rc, 0) << a.err;
  ASSERT_EQ(b.rc, 0) << b.err;
  nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ja["config"].erase("file");
  jb["config"].erase("file");
  EXPECT_EQ(ja, jb);
  // Not trivially equal: the stragglers' draws differ from one iteration to the next.
  EXPECT_NE(ja["iterations"][0]["completion_s"], ja["iterations"][1]["completion_s"]);

  const CommandResult r = run_cli("run " + twin + " --no-plots -q -o " + dir() + "/out");
  ASSERT_EQ(r.rc, 0) << r.err;
  // results.csv: time_s of each iteration, in order (no field of these rows is quoted).
  std::istringstream csv(slurp(dir() + "/out/results.csv"));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(csv, line);) {
    std::vector<std::string> fields;
    std::istringstream ls(line);
    for (std::string f; std::getline(ls, f, ',');) fields.push_back(f);
    rows.push_back(fields);
  }
  ASSERT_EQ(rows.size(), 7u);
  const auto column = std::find(rows[0].begin(), rows[0].end(), "time_s") - rows[0].begin();
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(std::stod(rows[i + 1].at(column)), ja["iterations"][i]["completion_s"].get<double>())
        << "iteration " << i;
  }
}

// A run experiment of several points or algorithms: simulate names `run`, at the key, before
// loading any point; a simulate-form file: run names `simulate`.
TEST_F(ConfigLanguageCli, EachCommandNamesTheOtherForAFileThatIsNotItsOwn) {
  const std::string swept = file("swept.yaml", kSwitch +
                                                   "algorithm: ring\nsize: 1MiB\n"
                                                   "sweep: {ranks: [4, 8, 16], delay: [0, 1ms]}\n");
  CommandResult r = run_cli("simulate " + swept);
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err,
             swept + ":4:8: sweep: this is a `run` experiment (6 points): use `stragglesim run " +
                 swept + "`");
  EXPECT_EQ(r.out, "");

  const std::string two = file("two.yaml", kSwitch + "algorithms: [ring, rhd]\nsize: 1MiB\n");
  r = run_cli("simulate " + two);
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err,
             two +
                 ":2:13: algorithms: this is a `run` experiment (1 point, 2 algorithms): use "
                 "`stragglesim run " +
                 two + "`");

  const std::string sim = file("sim.yaml", kSwitch + "collective: {algorithm: ring, size: 1MiB}\n");
  r = run_cli("run " + sim + " --no-plots -o " + dir() + "/out");
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, sim + ":2:13: collective: this is a `simulate` configuration");
  EXPECT_HAS(r.err, "use `stragglesim simulate " + sim + "`");
  EXPECT_FALSE(std::filesystem::exists(dir() + "/out"));
}

// Every shipped experiment is refused by simulate naming run (each has several points), every
// shipped simulate config by run naming simulate.
TEST(ConfigLanguage, ShippedFilesNameTheirCommand) {
  int experiments = 0, simulations = 0;
  for (const auto& f : std::filesystem::directory_iterator(source("configs/experiments"))) {
    if (f.path().extension() != ".yaml") continue;
    ++experiments;
    try {
      load_simulation_config(ConfigReader(f.path().string()));
      ADD_FAILURE() << f.path() << " loaded as one simulation";
    } catch (const InputError& e) {
      EXPECT_HAS(std::string(e.what()), "this is a `run` experiment (");
      EXPECT_HAS(std::string(e.what()), "use `stragglesim run " + f.path().string() + "`");
    }
  }
  for (const auto& f : std::filesystem::directory_iterator(source("configs/simulate"))) {
    if (f.path().extension() != ".yaml") continue;
    ++simulations;
    const ConfigReader reader(f.path().string());
    EXPECT_NO_THROW(load_simulation_config(reader)) << f.path();
    try {
      load_experiment(reader);
      ADD_FAILURE() << f.path() << " loaded as an experiment";
    } catch (const InputError& e) {
      EXPECT_HAS(std::string(e.what()), "use `stragglesim simulate " + f.path().string() + "`");
    }
  }
  EXPECT_GE(experiments, 10);
  EXPECT_GE(simulations, 2);
}

// Every key run can sweep, given to simulate as a one-value sweep and written in place, resolves
// to the same configuration (the seed aside).
TEST(ConfigLanguage, EverySweepableKeyIsOneValueForSimulate) {
  const std::string base =
      "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
      "algorithm: stragglar\nsize: 1MiB\niterations: 2\n";
  struct Case {
    std::string sweep;    // the sweep entry
    std::string inline_;  // the same value written in place
  };
  const std::vector<Case> cases = {
      {"ranks: [16]", "ranks: 16\n"},
      {"topology.ranks: [6]", "ranks: 6\n"},
      {"size: [4MiB]", ""},  // the size line is replaced below
      {"delay: [2ms]", "stragglers: {count: 1, delay: 2ms}\n"},
      {"stragglers: [2]", "stragglers: {count: 2, delay: 1ms}\n"},
      {"persistence: [0.5]", "stragglers: {count: 1, delay: 1ms, persistence: 0.5}\n"},
      {"policy: [previous]", "prediction: {policy: previous}\n"},
      {"gamma: [0.1ns/B]", "network: {gamma: 0.1ns/B}\n"},
      {"network.model: [flow]", "network: {model: flow}\n"},
      {"topology.bandwidth: [100GB/s]",
       "topology: {kind: switch, ranks: 8, bandwidth: 100GB/s, latency: 3us}\n"},
      // On a ring (an even one has two shortest routes to the rank opposite): a switch has
      // one route per pair, and ecmp there is refused.
      {"topology.ecmp: [true]",
       "topology: {kind: ring, ranks: 8, bandwidth: 450GiB/s, latency: 3us, ecmp: true}\n"},
      {"stragglers.delay.mean: [3ms]",
       "stragglers: {count: 1, delay: {distribution: exponential, mean: 3ms}}\n"},
      {"delays.base.mean: [20us]", "delays: {base: {distribution: exponential, mean: 20us}}\n"},
      {"prediction.detection: [5us]", "prediction: {policy: eager, detection: 5us}\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sweep);
    std::string head = base, tail;
    // Defaults the swept keys need beside them.
    if (c.sweep.rfind("stragglers", 0) == 0 || c.sweep.rfind("persistence", 0) == 0)
      tail += "stragglers: {count: 1, delay: 1ms}\n";
    if (c.sweep.rfind("stragglers.delay.mean", 0) == 0)
      tail = "stragglers: {count: 1, delay: {distribution: exponential, mean: 1ms}}\n";
    if (c.sweep.rfind("delays.base", 0) == 0)
      tail += "delays: {base: {distribution: exponential, mean: 1us}}\n";
    if (c.sweep.rfind("prediction.detection", 0) == 0) tail += "prediction: {policy: eager}\n";
    if (c.sweep.rfind("topology.ecmp", 0) == 0) head.replace(head.find("switch"), 6, "ring");
    const sim::SimulationConfig swept = simulation(head + tail + "sweep: {" + c.sweep + "}\n");
    std::string written = head;
    if (c.sweep.rfind("size", 0) == 0)
      written.replace(written.find("size: 1MiB"), 10, "size: 4MiB");
    if (c.inline_.rfind("topology:", 0) == 0)
      written.replace(0, written.find('\n') + 1, c.inline_);
    else
      written += c.inline_;
    const sim::SimulationConfig direct = simulation(written);
    EXPECT_EQ(resolved(swept), resolved(direct));
    // And the value took effect (it is not the default).
    EXPECT_NE(resolved(direct), resolved(simulation(head + tail)));
  }
}

// `topology: {file: X, key: value}` overrides the file's keys (maps merge), in both commands;
// an error in an override names the including file, its line and the key path there.
TEST(ConfigLanguage, TopologyFileWithOverrides) {
  const std::string rail = source("configs/topologies/h100_4x8_rail.yaml");
  const std::string head =
      "topology: {file: " + rail + ", ecmp: true, nic: {bandwidth: 200Gbps}}\n";
  const sim::SimulationConfig c = simulation(head + "algorithm: ring\nsize: 1MiB\n");
  EXPECT_TRUE(c.topology.ecmp());
  EXPECT_EQ(c.topology.gpu_count(), 32);
  EXPECT_HAS(c.topology.description, "NIC 25.00GB/s");          // 200 Gb/s
  EXPECT_HAS(c.topology.description, "spine links 50.00GB/s");  // the file's, kept

  const Experiment e = load_experiment(ConfigReader::from_string(
      head + "algorithms: [ring, rhd]\nsize: 1MiB\nsweep: {topology.ecmp: [false, true]}\n",
      "exp.yaml"));
  EXPECT_FALSE(e.points[0].config.topology.ecmp());
  EXPECT_TRUE(e.points[1].config.topology.ecmp());
  EXPECT_EQ(e.topology_file, rail);

  EXPECT_EQ(simulate_error("topology: {file: " + rail +
                           ",\n  ecmp: maybe}\nalgorithm: ring\nsize: 1MiB\n"),
            "sim.yaml:2:9: topology.ecmp: expected true or false (value: maybe)");
  EXPECT_HAS(simulate_error("topology: {file: " + rail +
                            ", nic: {bandwdth: 1GB/s}}\nalgorithm: ring\nsize: 1MiB\n"),
             "unknown key 'bandwdth'");
  // A swept value of a topology file's key, likewise.
  EXPECT_EQ(run_error("topology: {file: " + rail +
                      "}\nalgorithms: [ring]\nsize: 1MiB\nsweep: {topology.ecmp: [true, maybe]}\n"),
            "sweep point 2 of 2 (topology.ecmp=maybe): exp.yaml:4:31: sweep.topology.ecmp[1]: "
            "expected true or false (value: maybe)");
}

// The keys simulate did not take before: delays.trace/persistent in run, ranks:, algorithm:;
// and the defaults each form keeps.
TEST(ConfigLanguage, DelaysRanksAndDefaults) {
  // run takes delays.persistent; a rank given there and in stragglers is an error.
  const Experiment e = load_experiment(ConfigReader::from_string(
      kSwitch + "algorithms: [ring]\nsize: 1MiB\ndelays: {persistent: [{rank: 2, delay: 1ms}]}\n"
                "stragglers: {count: 1, delay: 2ms}\n",
      "exp.yaml"));
  ASSERT_EQ(e.points[0].config.delays.stragglers.size(), 2u);
  EXPECT_HAS(run_error(kSwitch + "algorithms: [ring]\nsize: 1MiB\ndelays: {persistent: [{rank: 7, "
                                 "delay: 1ms}]}\nstragglers: {count: 1, delay: 2ms}\n"),
             "exp.yaml:5:13: stragglers: rank 7 is a straggler here and in delays.persistent");
  EXPECT_HAS(
      run_error(kSwitch +
                "algorithms: [ring]\nsize: 1MiB\ndelays: {persistent: [{rank: 8, delay: 1ms}]}\n"),
      "delays.persistent[0].rank: must be in [0, 7] (value: 8)");
  // ranks: sets the topology's rank count, as sweep.ranks does; not both.
  EXPECT_EQ(simulation(kSwitch + "algorithm: ring\nsize: 1MiB\nranks: 12\n").topology.gpu_count(),
            12);
  EXPECT_HAS(
      simulate_error(kSwitch + "algorithm: ring\nsize: 1MiB\nranks: 12\nsweep: {ranks: [4]}\n"),
      "sim.yaml:4:8: ranks: ranks is swept (sweep.ranks): leave it out here");
  // Defaults: 20 iterations, 1 with collective:; the seed as given without a sweep.
  EXPECT_EQ(simulation(kSwitch + "algorithm: ring\nsize: 1MiB\nseed: 5\n").iterations, 20);
  EXPECT_EQ(simulation(kSwitch + "algorithm: ring\nsize: 1MiB\nseed: 5\n").seed, 5u);
  EXPECT_EQ(simulation(kSwitch + "collective: {algorithm: ring, size: 1MiB}\n").iterations, 1);
  // A straggler the schedule is built for, no prediction: fixed there, in both commands.
  const std::string built =
      kSwitch + "algorithm: {algorithm: stragglar, options: {straggler: 3}}\nsize: 1MiB\n";
  const sim::SimulationConfig s = simulation(built);
  EXPECT_EQ(s.policy, sim::StragglerPolicy::fixed);
  EXPECT_EQ(s.straggler, 3);
  const Experiment r = load_experiment(ConfigReader::from_string(built, "exp.yaml"));
  EXPECT_EQ(run_config(r, 0).policy, sim::StragglerPolicy::fixed);
  const Experiment o = load_experiment(
      ConfigReader::from_string(built + "prediction: {policy: oracle}\n", "exp.yaml"));
  EXPECT_EQ(run_config(o, 0).policy, sim::StragglerPolicy::oracle);
  // collective: and algorithm(s) or size together: one too many.
  EXPECT_HAS(
      simulate_error(kSwitch + "collective: {algorithm: ring, size: 1MiB}\nalgorithm: ring\n"),
      "give the algorithms once");
  EXPECT_HAS(simulate_error(kSwitch + "collective: {algorithm: ring, size: 1MiB}\nsize: 2MiB\n"),
             "sim.yaml:3:7: size: collective: gives the size already");
}

}  // namespace
}  // namespace ssim::experiments
