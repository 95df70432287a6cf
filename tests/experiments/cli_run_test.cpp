// `stragglesim run` and `stragglesim advise` through the built binary.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string source(const std::string& relative) {
  return std::string(STRAGGLESIM_SOURCE_DIR) + "/" + relative;
}

std::string temp_dir(const std::string& tag) {
  const std::string dir = "/tmp/ssim_cli_run_" + tag + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

std::size_t lines_of(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(CliRun, DryRunListsTheRunsAndWritesNothing) {
  const std::string dir = temp_dir("dry");
  const CommandResult r =
      run_cli("run " + source("configs/experiments/paper_scaling.yaml") + " --dry-run -o " + dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  // 18 rank counts x 5 algorithms.
  EXPECT_TRUE(
      contains(r.out, "paper_scaling: 18 sweep points x 5 algorithms = 90 runs of 1 iteration"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "point 17 [ranks=1024]: switch(1024) (1024 ranks), 1GiB, alphabeta"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  run 89: dbtree\n")) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(CliRun, DefaultExperimentRunsWithoutArguments) {
  // No experiment argument: configs/experiments/default.yaml, the main job. Its speed is not a
  // unit test's business (no timed tests: sanitizer builds and loaded CI machines run it 5-10x
  // slower); `./scripts/run.sh` reports it.
  const std::string dir = temp_dir("default");
  const CommandResult r = run_cli("run -o " + dir + " --no-plots --jobs 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "default: mean completion time")) << r.out;
  EXPECT_TRUE(contains(r.out, "wins:")) << r.out;
  // Non-terminal stderr: one line per finished run.
  EXPECT_TRUE(contains(r.err, "[1/")) << r.err;
  const auto j = nlohmann::json::parse(slurp(dir + "/results.json"));
  const std::size_t runs = j["points"].size() * j["algorithms"].size();
  EXPECT_EQ(lines_of(dir + "/results.csv"), 1 + runs * j["iterations"].get<std::size_t>());
  std::filesystem::remove_all(dir);
}

TEST(CliRun, PlotsOrASayWhyNot) {
  const std::string dir = temp_dir("plots");
  const std::string yaml = dir + ".yaml";
  std::ofstream(yaml) << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                         "algorithms: [stragglar, ring]\nbaseline: ring\nsize: 64MiB\n"
                         "stragglers: {delay: 2ms}\niterations: 2\nsweep: {ranks: [4, 8]}\n";
  const CommandResult r = run_cli("run " + yaml + " -o " + dir + " -q");
  ASSERT_EQ(r.rc, 0) << r.err;
  // Plotting never fails the run: either the PNGs exist or stderr says why not. The two
  // iterations are identical (a constant delay), so the output says why there is no CDF.
  const bool plotted = std::filesystem::exists(dir + "/speedup_vs_ranks.png") &&
                       !std::filesystem::exists(dir + "/speedup_cdf.png") &&
                       contains(r.out, "no speedup_cdf: the 2 iterations of each run are identical");
  EXPECT_TRUE(plotted || contains(r.err, "plots")) << r.out << r.err;
  std::filesystem::remove_all(dir);
  std::remove(yaml.c_str());
}

// Whether plot.py can run here (a python3 with matplotlib, as `run` looks for one).
bool have_matplotlib() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(py) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return true;
  }
  return false;
}

TEST(CliRun, PlotFormatsAndTheCdfOnlyWithSeveralIterations) {
  if (!have_matplotlib()) GTEST_SKIP() << "no python3 with matplotlib";
  const std::string dir = temp_dir("formats");
  const std::string yaml = dir + ".yaml";
  std::ofstream(yaml) << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                         "algorithms: [stragglar, ring, rhd]\nbaseline: ring\nsize: 1MiB\n"
                         "stragglers: {delay: {distribution: exponential, mean: 1ms}}\n"
                         "iterations: 4\nsweep: {ranks: [4, 8], policy: [oracle, fixed]}\n";
  const CommandResult r = run_cli("run " + yaml + " -o " + dir + " -q --plot-format png,svg,pdf");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* stem : {"speedup_vs_ranks", "speedup_vs_policy", "speedup_cdf"}) {
    for (const char* ext : {"png", "svg", "pdf"}) {
      const std::string f = dir + "/" + stem + "." + ext;
      EXPECT_TRUE(std::filesystem::exists(f) && std::filesystem::file_size(f) > 1000)
          << f << "\n"
          << r.out << r.err;
    }
  }
  EXPECT_TRUE(contains(slurp(dir + "/speedup_vs_ranks.svg"), "95% CI, paired bootstrap"));
  EXPECT_FALSE(contains(r.out, "no speedup_cdf")) << r.out;

  // One iteration: no CDF, and the output says why.
  std::filesystem::remove_all(dir);
  const CommandResult one = run_cli("run " + yaml + " -o " + dir + " -q --iterations 1");
  ASSERT_EQ(one.rc, 0) << one.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/speedup_vs_ranks.png")) << one.out << one.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/speedup_vs_ranks.svg"));  // png by default
  EXPECT_FALSE(std::filesystem::exists(dir + "/speedup_cdf.png"));
  EXPECT_TRUE(contains(one.out, "no speedup_cdf: 1 iteration per run, a CDF needs several"))
      << one.out;
  std::filesystem::remove_all(dir);
  std::remove(yaml.c_str());
}

TEST(CliRun, BadPlotFormatIsAClearError) {
  const CommandResult r = run_cli("run --dry-run --plot-format png,jpeg");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "--plot-format")) << r.err;
  EXPECT_TRUE(contains(r.err, "expected a comma-separated list of png, svg, pdf")) << r.err;
  EXPECT_TRUE(contains(r.err, "'jpeg' is not one")) << r.err;
  const CommandResult both = run_cli("run --dry-run --plot-format pdf --no-plots");
  EXPECT_NE(both.rc, 0);
  EXPECT_TRUE(contains(both.err, "--no-plots")) << both.err;
}

// Piped, stderr gets one line per finished run, every one of them, in the order they finished.
TEST(CliRun, PipedProgressDeliversEveryLine) {
  const std::string dir = temp_dir("piped");
  const std::string yaml = dir + ".yaml", log = dir + ".log";
  std::ofstream(yaml) << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                         "algorithms: [stragglar, ring, rhd, direct]\nsize: 1MiB\n"
                         "delays: {base: {distribution: exponential, mean: 50us}}\n"
                         "iterations: 100\nsweep: {ranks: [4, 5, 6, 7, 8, 9, 10, 11], "
                         "delay: [0, 1ms, 2ms, 3ms, 4ms, 5ms, 6ms, 7ms, 8ms, 9ms, 10ms, 11ms, "
                         "12ms, 13ms, 14ms, 15ms]}\n";  // 512 short runs (0.3 s)
  const std::string cmd = std::string(STRAGGLESIM_BIN) + " run " + yaml + " -o " + dir +
                          " --no-plots --jobs 4 2>&1 >/dev/null | cat > " + log;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string text = slurp(log);
  // Before the fix, the runs that finished while the last points were written were never
  // reported: 34 to 507 of these 512 lines arrived.
  for (int k = 1; k <= 512; ++k) {
    ASSERT_TRUE(contains(text, "[" + std::to_string(k) + "/512] run ")) << k << "\n" << text;
  }
  std::filesystem::remove_all(dir);
  std::remove(yaml.c_str());
  std::remove(log.c_str());
}

TEST(CliRun, BadInputIsOneClearError) {
  const CommandResult missing = run_cli("run /nonexistent/exp.yaml");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_TRUE(contains(missing.err, "/nonexistent/exp.yaml: cannot open file for reading"))
      << missing.err;

  const std::string yaml = temp_dir("bad") + ".yaml";
  std::ofstream(yaml) << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
                         "algorithms: [ring, nope]\nsize: 1MiB\n";
  const CommandResult bad = run_cli("run " + yaml + " --dry-run");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, yaml + ":2:20: algorithms[1]: unknown algorithm")) << bad.err;
  std::remove(yaml.c_str());
}

TEST(CliAdvise, RanksTheCandidates) {
  const CommandResult r = run_cli(
      "advise --topology dgx_h100 --size 1GiB --delay-dist '{distribution: lognormal, mean: 9.5ms, "
      "p90: 18.8ms}' "
      "--persistence 0.9 --algorithms stragglar,ring,direct --iterations 100");
  ASSERT_EQ(r.rc, 0) << r.err;
  // With a ~9.5 ms straggler at 1 GiB on 8 GPUs StragglAR hides its ReduceScatter
  // (T_RS ~ 1.9 ms) most of the time and wins; Direct's full-buffer steps lose.
  EXPECT_TRUE(contains(r.out, "\n1    stragglar")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n3    direct")) << r.out;
  EXPECT_TRUE(contains(r.out, "use stragglar: expected ")) << r.out;
  EXPECT_TRUE(contains(r.out, "dgx-h100, 8 ranks, 1GiB")) << r.out;

  const CommandResult shorthand = run_cli(
      "advise --topology switch:450GiB/s:3us --ranks 16 --size 64MiB --delay-dist 5ms --iterations "
      "5");
  ASSERT_EQ(shorthand.rc, 0) << shorthand.err;
  EXPECT_TRUE(contains(shorthand.out, "switch(16), 16 ranks, 64MiB")) << shorthand.out;
}

// Every row lines up under the header whatever the label lengths (halving_doubling,
// straggler_tree), and the "fastest" column sums to 100%: an iteration that several algorithms
// tie for (rhd and halving_doubling on one switch) is split among them, not counted twice.
TEST(CliAdvise, TheTableLinesUpAndTheFastestColumnSumsTo100) {
  const CommandResult r = run_cli(
      "advise --topology dgx_h100 --size 1GiB --delay-dist '{distribution: lognormal, mean: 9.5ms, "
      "p90: 18.8ms}' --persistence 0.9 --iterations 40");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line, header;
  double fastest = 0;
  int rows = 0;
  bool long_label = false;
  while (std::getline(lines, line)) {
    if (line.rfind("rank algorithm", 0) == 0) {
      header = line;
      continue;
    }
    if (header.empty() || line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
    ++rows;
    long_label = long_label || contains(line, "halving_doubling");
    EXPECT_EQ(line.size(), header.size()) << "\n" << header << "\n" << line;
    // The mean column ends where the header's "mean" ends.
    const std::size_t mean_end = header.find("mean") + 4;
    ASSERT_LT(mean_end, line.size());
    EXPECT_EQ(line[mean_end - 1], 's') << line;  // a time ends in s (ms, us, s)
    EXPECT_EQ(line[mean_end], ' ') << line;
    fastest += std::stod(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_GT(rows, 10) << r.out;
  EXPECT_TRUE(long_label) << r.out;
  EXPECT_NEAR(fastest, 100.0, 0.1 * rows) << r.out;
}

TEST(CliAdvise, BadFlagsNameTheFlag) {
  const CommandResult dist = run_cli(
      "advise --topology dgx_h100 --size 1GiB --delay-dist '{distribution: lognormal, mean: "
      "9.5ms}'");
  EXPECT_EQ(dist.rc, 1);
  EXPECT_TRUE(contains(dist.err, "--delay-dist:1:")) << dist.err;
  const CommandResult topo = run_cli("advise --topology nowhere --size 1GiB");
  EXPECT_EQ(topo.rc, 1);
  EXPECT_TRUE(contains(topo.err, "--topology 'nowhere': not a file")) << topo.err;
  const CommandResult size = run_cli("advise --topology dgx_h100 --size 1GB/s");
  EXPECT_EQ(size.rc, 1);
  EXPECT_TRUE(contains(size.err, "--size:")) << size.err;
}

}  // namespace
}  // namespace ssim::testing
