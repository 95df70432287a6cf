// Traces through the CLI (issue 13): counters in `simulate --trace` (and --trace-links),
// `run --trace POINT`, `advise --trace FILE`, each checked by the strict Perfetto-like checker;
// and the short flags (one meaning each across subcommands) and the program name in usage.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_support.hpp"
#include "tests/sim/trace_check.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

class CliTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ssim_trace_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& text = "") const {
    const std::string path = (dir_ / name).string();
    if (!text.empty()) std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Two algorithms over two sizes, 3 iterations, flow model: 4 runs.
  std::string experiment() const {
    return file("exp.yaml",
                "name: tiny\n"
                "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                "network: {model: flow}\n"
                "algorithms: [ring, rhd]\n"
                "baseline: ring\n"
                "delays: {base: {distribution: exponential, mean: 50us}}\n"
                "stragglers: {count: 1, delay: 2ms, persistence: 1}\n"
                "iterations: 3\nseed: 7\n"
                "output: " + (dir_ / "out").string() + "\n"
                "sweep: {size: [1MiB, 4MiB]}\n");
  }

 private:
  std::filesystem::path dir_;
};

std::size_t link_tracks(const TraceCounts& c) {
  std::size_t n = 0;
  for (const auto& [name, values] : c.counter_tracks) n += contains(name, "/link ");
  return n;
}

TEST_F(CliTrace, SimulateFlowTraceHasLinkAndQueueCounters) {
  const std::string cfg = file("flow.yaml",
                               "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                               "network: {model: flow}\n"
                               "collective: {algorithm: rhd, size: 64MiB}\n"
                               "iterations: 1\n");
  const std::string trace = file("t.json");
  const CommandResult r = run_cli("simulate " + cfg + " --trace " + trace);
  ASSERT_EQ(r.rc, 0) << r.err;
  const TraceCounts all = check_trace_strict(slurp(trace));
  EXPECT_EQ(link_tracks(all), 16u);  // every up- and downlink of the 8 GPUs carries traffic
  EXPECT_EQ(all.counter_tracks.size() - link_tracks(all), 16u);  // send and recv queue per rank
  // The busiest 3 only; 0: none.
  ASSERT_EQ(run_cli("simulate " + cfg + " --trace " + trace + " --trace-links 3").rc, 0);
  EXPECT_EQ(link_tracks(check_trace_strict(slurp(trace))), 3u);
  ASSERT_EQ(run_cli("simulate " + cfg + " --trace " + trace + " --trace-links 0").rc, 0);
  EXPECT_EQ(link_tracks(check_trace_strict(slurp(trace))), 0u);
}

TEST_F(CliTrace, SimulateTraceLinksErrors) {
  const std::string cfg = file("ab.yaml",
                               "topology: {kind: switch, ranks: 4, bandwidth: 450GiB/s, latency: 3us}\n"
                               "collective: {algorithm: ring, size: 1MiB}\n");
  const std::string trace = file("t.json");
  const CommandResult ab = run_cli("simulate " + cfg + " --trace " + trace + " --trace-links 2");
  EXPECT_EQ(ab.rc, 1) << ab.err;
  EXPECT_TRUE(contains(ab.err, "stragglesim: error: " + cfg + ": trace links: link utilization counters need the flow model"))
      << ab.err;
  EXPECT_FALSE(std::filesystem::exists(trace)) << "a failed run leaves no trace file";
  const CommandResult alone = run_cli("simulate " + cfg + " --trace-links 2");
  EXPECT_EQ(alone.rc, 2);
  EXPECT_TRUE(contains(alone.err, "--trace-links needs --trace FILE")) << alone.err;
  const CommandResult unwritable = run_cli("simulate " + cfg + " --trace /nonexistent/dir/t.json");
  EXPECT_EQ(unwritable.rc, 1);
  EXPECT_TRUE(contains(unwritable.err, "stragglesim: error: /nonexistent/dir/t.json: cannot open file for writing"))
      << unwritable.err;
  const CommandResult iteration = run_cli("simulate " + cfg + " --trace-iteration 0");
  EXPECT_EQ(iteration.rc, 2);
  EXPECT_TRUE(contains(iteration.err, "--trace-iteration requires --trace")) << iteration.err;
  const CommandResult negative = run_cli("simulate " + cfg + " --trace " + trace + " --trace-links -1");
  EXPECT_EQ(negative.rc, 2) << negative.err;
}

// The trace of one run of an experiment is that run's iteration: its completion equals the
// results.csv row of the full experiment.
TEST_F(CliTrace, RunTracePointByKeysAndByIndex) {
  const std::string exp = experiment();
  const CommandResult full = run_cli("run " + exp + " --no-plots -q");
  ASSERT_EQ(full.rc, 0) << full.err;
  const CommandResult r = run_cli("run " + exp + " --trace size=4MiB,label=rhd,iteration=1");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string trace = file("out/trace-run3-iteration1.json");
  EXPECT_TRUE(contains(r.out, "run 3 (rhd at size=4MiB), iteration 1: completion ")) << r.out;
  EXPECT_TRUE(contains(r.out, "wrote " + trace)) << r.out;
  const std::string text = slurp(trace);
  const TraceCounts c = check_trace_strict(text);
  EXPECT_GT(c.flows, 0u);
  EXPECT_GT(link_tracks(c), 0u);
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["otherData"]["algorithm"], "rhd");
  EXPECT_EQ(j["otherData"]["bytes"], 4 << 20);
  // results.csv: run 3, iteration 1.
  std::ifstream csv(file("out/results.csv"));
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, line, ',');) header.push_back(line);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  double time_s = -1;
  for (std::string row; std::getline(csv, row);) {
    std::vector<std::string> f;
    for (std::stringstream ss(row); std::getline(ss, line, ',');) f.push_back(line);
    if (f[col("run")] == "3" && f[col("iteration")] == "1") time_s = std::stod(f[col("time_s")]);
  }
  ASSERT_GT(time_s, 0);
  EXPECT_NEAR(j["otherData"]["completion_us"].get<double>(), time_s * 1e6, 1e-3);

  // A bare number is the run index; sweep.KEY is the results.csv column name.
  const CommandResult by_index = run_cli("run " + exp + " --trace 2");
  ASSERT_EQ(by_index.rc, 0) << by_index.err;
  EXPECT_TRUE(contains(by_index.out, "run 2 (ring at size=4MiB), iteration 0")) << by_index.out;
  check_trace_strict(slurp(file("out/trace-run2-iteration0.json")));
  const CommandResult by_column = run_cli("run " + exp + " --trace sweep.size=1MiB,algorithm=rhd --trace-links 1");
  ASSERT_EQ(by_column.rc, 0) << by_column.err;
  EXPECT_EQ(link_tracks(check_trace_strict(slurp(file("out/trace-run1-iteration0.json")))), 1u);
}

// A shipped flow-model experiment on a multi-hop fabric (NVSwitch, NICs, rails, spines, ECMP):
// the strict checker passes and links of every tier get a counter.
TEST_F(CliTrace, ShippedMultiNodeRunTrace) {
  const std::string out = file("mn");
  const CommandResult r =
      run_cli("run " + std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/experiments/multi_node.yaml -o " + out +
              " --trace 'label=stragglar,topology.ecmp=true,size=64MiB,delay=20ms'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "run 52 (stragglar at topology.ecmp=true size=64MiB delay=20ms)")) << r.out;
  const TraceCounts c = check_trace_strict(slurp(out + "/trace-run52-iteration0.json"));
  EXPECT_GT(c.flows, 0u);
  bool nvlink = false, spine = false;
  for (const auto& [name, values] : c.counter_tracks) {
    nvlink |= contains(name, "nvswitch");
    spine |= contains(name, "spine");
  }
  EXPECT_TRUE(nvlink);
  EXPECT_TRUE(spine);
}

TEST_F(CliTrace, RunTracePointErrors) {
  const std::string exp = experiment();
  struct Case {
    std::string point;
    int rc;
    std::string what;
  };
  const std::vector<Case> cases = {
      {"size=4MiB", 1, "--trace 'size=4MiB' matches 2 runs of " + exp + ": run 2 (ring at size=4MiB); run 3 (rhd at size=4MiB)"},
      {"size=8MiB", 1, "size=8MiB is not a value of the sweep (values: 1MiB, 4MiB)"},
      {"ranks=8", 1, "unknown key 'ranks' (keys: run, point, label, algorithm, iteration, size)"},
      {"label=tree", 1, "label=tree is not in the experiment (labels: ring, rhd)"},
      {"9", 1, "run=9 is not one of 0..3"},
      {"run=1,label=ring", 1, "matches no run"},
      {"iteration=3,run=0", 1, "iteration=3 is not one of 0..2"},
      {"size", 2, "'size' is not key=value"},
      {"run=1,,", 2, "'' is not key=value"},
      {"run=1,run=2", 2, "key 'run' given twice"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_cli("run " + exp + " --trace '" + c.point + "'");
    EXPECT_EQ(r.rc, c.rc) << c.point << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("stragglesim: error: ", 0), 0u) << r.err;
    EXPECT_TRUE(contains(r.err, c.what)) << c.point << ": expected \"" << c.what << "\" in\n" << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(file("out/results.csv")));  // nothing was run
  for (const std::string other : {"--dry-run", "--resume", "--shard 1/2", "--plot-format svg"}) {
    const CommandResult r = run_cli("run " + exp + " --trace 0 " + other);
    EXPECT_EQ(r.rc, 2) << other << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "excludes")) << r.err;
  }
  EXPECT_EQ(run_cli("run " + exp + " --trace-links 2").rc, 2);
}

TEST_F(CliTrace, AdviseTracesTheRecommendation) {
  const std::string trace = file("advice.json");
  const std::string args =
      "advise --topology switch:450GiB/s:3us -r 8 --size 64MiB --delay-dist 5ms --algorithms "
      "ring,stragglar -n 3 --trace " + trace;
  const CommandResult r = run_cli(args + " --trace-iteration 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "use stragglar")) << r.out;
  EXPECT_TRUE(contains(r.out, "trace of stragglar, iteration 2 (")) << r.out;
  const std::string text = slurp(trace);
  check_trace_strict(text);
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["otherData"]["algorithm"], "stragglar");
  EXPECT_TRUE(contains(j["otherData"]["title"].get<std::string>(), "iteration 2"));

  const CommandResult past = run_cli(args + " --trace-iteration 3");
  EXPECT_EQ(past.rc, 1);
  EXPECT_TRUE(contains(past.err, "--trace-iteration 3 is past the last iteration (2)")) << past.err;
  const CommandResult links = run_cli(args + " --trace-links 2");  // alphabeta: no link rates
  EXPECT_EQ(links.rc, 1);
  EXPECT_TRUE(contains(links.err, "need the flow model")) << links.err;
  const CommandResult alone = run_cli(
      "advise --topology dgx_h100 --size 1MiB --trace-iteration 1");
  EXPECT_EQ(alone.rc, 2);
  EXPECT_TRUE(contains(alone.err, "--trace-iteration requires --trace")) << alone.err;
}

// One meaning per short flag: -n iterations (simulate, run, advise), -r ranks (schedule, lower,
// advise, calibrate); the old `schedule -n RANKS` names its replacement.
TEST_F(CliTrace, ShortFlagsHaveOneMeaning) {
  const CommandResult ranks = run_cli("schedule ring -r 4");
  ASSERT_EQ(ranks.rc, 0) << ranks.err;
  EXPECT_TRUE(contains(ranks.out, "R0")) << ranks.out;
  for (const std::string cmd : {"schedule ring -n 4", "lower ring -n 4 -b 4KiB"}) {
    const CommandResult old = run_cli(cmd);
    EXPECT_EQ(old.rc, 2) << cmd << "\n" << old.err;
    EXPECT_TRUE(contains(old.err, "stragglesim: error: -n is the iteration count in stragglesim")) << old.err;
    EXPECT_TRUE(contains(old.err, "-r or --ranks")) << old.err;
  }
  ASSERT_EQ(run_cli("lower ring -r 4 -b 4KiB").rc, 0);
  const std::string cfg = file("s.yaml",
                               "topology: {kind: switch, ranks: 4, bandwidth: 450GiB/s, latency: 3us}\n"
                               "collective: {algorithm: ring, size: 1MiB}\niterations: 9\n");
  const CommandResult sim = run_cli("simulate " + cfg + " -n 2 --json");
  ASSERT_EQ(sim.rc, 0) << sim.err;
  EXPECT_EQ(nlohmann::json::parse(sim.out)["iterations"].size(), 2u);
}

TEST_F(CliTrace, UsageShowsTheProgramName) {
  for (const std::string cmd : {"--help", "run --help", "schedule --help", "simulate --help"}) {
    const CommandResult r = run_cli(cmd);
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_TRUE(contains(r.out, "Usage: stragglesim")) << cmd << "\n" << r.out;
    EXPECT_FALSE(contains(r.out + r.err, STRAGGLESIM_BIN)) << cmd << "\n" << r.out;
  }
}

}  // namespace
}  // namespace ssim::testing
