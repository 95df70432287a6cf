// Issue 25, the guards and the silent acceptances: work beyond the time limit (--max-time) or
// a config beyond its size bounds is refused before it starts, with the estimate and the flag
// that raises the limit; every malformed value is one clear error (exit code, message, nothing
// written), never a silent default.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_support.hpp"

namespace {

using ssim::testing::CommandResult;
using ssim::testing::data_path;
using ssim::testing::run_cli;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

class CliGuards : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ssim_guards_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

const std::string kSmallSim =
    "topology: {kind: switch, ranks: 8, bandwidth: 100GB/s, latency: 1us}\n"
    "collective: {algorithm: ring, size: 1MiB}\n"
    "iterations: 3\n";

// Exit 3 with the estimate and the flag that raises the limit, and nothing on stdout.
void expect_time_refusal(const CommandResult& r, const std::string& what) {
  EXPECT_EQ(r.rc, 3) << what << ": " << r.err;
  EXPECT_TRUE(contains(r.err, "would take about")) << what << ": " << r.err;
  EXPECT_TRUE(contains(r.err, "--max-time")) << what << ": " << r.err;
  EXPECT_TRUE(r.out.empty()) << what << ": " << r.out;
}

TEST_F(CliGuards, RoundsOverAWideRangeIsRefusedAtOnce) {
  expect_time_refusal(run_cli("rounds --ranks 3..4096 --stragglers 1..4094"), "rounds");
  // The default limit is an hour; a small table stays well below it, and a limit raised far
  // enough lets the estimate pass (the check runs before the first schedule).
  const CommandResult small = run_cli("rounds --ranks 3..12");
  EXPECT_EQ(small.rc, 0) << small.err;
  expect_time_refusal(run_cli("rounds --ranks 3..400 --max-time 1s"), "rounds --max-time 1s");
}

TEST_F(CliGuards, LowerScheduleAndSimulateAreRefusedBeyondTheLimits) {
  // lower: the plan of a million ranks needs petabytes; 4096 ranks 23 GiB and over 10 minutes.
  const CommandResult big = run_cli("lower ring --ranks 1000000 --bytes 64MiB");
  EXPECT_EQ(big.rc, 3) << big.err;
  EXPECT_TRUE(contains(big.err, "--max-memory")) << big.err;
  expect_time_refusal(
      run_cli("lower ring --ranks 4096 --bytes 64MiB --max-memory 1000TiB --max-time 1min -o " +
              path("p.txt")),
      "lower");
  EXPECT_FALSE(std::filesystem::exists(path("p.txt")));
  expect_time_refusal(run_cli("schedule rhd --ranks 65536 --max-memory 1000TiB"), "schedule");
  const std::string sim = file("sim.yaml", kSmallSim);
  expect_time_refusal(run_cli("simulate " + sim + " -n 10000000 --max-time 10s"), "simulate");
  const CommandResult ok = run_cli("simulate " + sim + " --max-time 10s");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  expect_time_refusal(
      run_cli("advise --topology switch:100GB/s:1us --ranks 64 --size 1MiB -n 10000000 "
              "--max-memory 1000TiB --max-time 1min"),
      "advise");
  const std::string exp = file("exp.yaml",
                               "name: big\n"
                               "topology: {kind: switch, ranks: 1024, bandwidth: 100GB/s, "
                               "latency: 1us}\n"
                               "network: {model: flow}\n"
                               "algorithms: [ring]\nsize: 1MiB\niterations: 1000\n");
  expect_time_refusal(run_cli("run " + exp + " --max-time 1min -o " + path("out")), "run");
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(CliGuards, MaxTimeTakesADurationWithAUnit) {
  for (const char* bad : {"0s", "-1h", "nan", "infh", "10", "1x", "1e400s"}) {
    const CommandResult r = run_cli(std::string("rounds --ranks 3..5 --max-time ") + bad);
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "--max-time")) << bad << ": " << r.err;
  }
  for (const char* good : {"90s", "30min", "2h", "1.5d"})
    EXPECT_EQ(run_cli(std::string("rounds --ranks 3..5 --max-time ") + good).rc, 0) << good;
}

TEST_F(CliGuards, YamlAliasesThatExpandTooFarAreRefused) {
  // Seven levels of ten aliases: 10^7 list items from a few lines.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 7; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    text += "]\n";
  }
  const std::string bomb = file("bomb.yaml", text + kSmallSim);
  for (const std::string& cmd :
       {"simulate " + bomb, "run --dry-run " + bomb, "run " + bomb + " -o " + path("o")}) {
    const CommandResult r = run_cli(cmd);
    EXPECT_EQ(r.rc, 1) << cmd << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "aliases")) << cmd << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(path("o")));
}

TEST_F(CliGuards, YamlNullsEmptyListsSecondDocumentsAndRepeatsAreErrors) {
  const std::string adaptive =
      "topology: {kind: switch, ranks: 8, bandwidth: 100GB/s, latency: 1us}\n"
      "collective: {algorithm: stragglar, size: 1MiB}\niterations: 3\n";
  const struct {
    std::string text, message;
  } cases[] = {
      {adaptive + "prediction: {policy: ~}\n", "prediction.policy: no value"},
      {adaptive + "prediction: {policy: }\n", "prediction.policy: no value"},
      {adaptive + "prediction: {policy: adaptive, fallback: []}\n", "an empty list"},
      {adaptive + "prediction: {policy: adaptive, fallback: [ring, ring]}\n",
       "'ring' is listed twice"},
      {kSmallSim + "---\niterations: 5\n", "a second YAML document"},
      {kSmallSim + "seed:\n", "seed: no value"},
  };
  for (const auto& c : cases) {
    const CommandResult r = run_cli("simulate " + file("c.yaml", c.text));
    EXPECT_EQ(r.rc, 1) << c.text << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << c.text << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  const CommandResult algs =
      run_cli("run --dry-run " +
              file("e.yaml",
                   "name: x\ntopology: {kind: switch, ranks: 8, bandwidth: 100GB/s, latency: 1us}\n"
                   "algorithms: [ring, rhd, ring]\nsize: 1MiB\n"));
  EXPECT_EQ(algs.rc, 1) << algs.err;
  EXPECT_TRUE(contains(algs.err, "algorithm label 'ring' is used twice")) << algs.err;
}

TEST_F(CliGuards, ControlCharactersInNamesAreRefusedAndNeverPrintedRaw) {
  const CommandResult r =
      run_cli("run --dry-run " +
              file("e.yaml",
                   "name: \"x\\e[31mred\"\n"
                   "topology: {kind: switch, ranks: 8, bandwidth: 100GB/s, latency: 1us}\n"
                   "algorithms: [ring]\nsize: 1MiB\n"));
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "control character (U+001B")) << r.err;
  EXPECT_FALSE(contains(r.err, "\x1b")) << r.err;
  // A name from the command line is echoed escaped.
  const CommandResult flag = run_cli("schedule \"$(printf 'ring\\033[2J')\" --ranks 4");
  EXPECT_EQ(flag.rc, 1) << flag.err;
  EXPECT_TRUE(contains(flag.err, "ring\\x1b[2J")) << flag.err;
  EXPECT_FALSE(contains(flag.err, "\x1b")) << flag.err;
}

TEST_F(CliGuards, FlagListsNumbersOptionsAndAlignment) {
  const std::string advise = "advise --topology switch:100GB/s:1us --ranks 8 --size 1MiB -n 2 ";
  const CommandResult empty = run_cli(advise + "--algorithms ring,,rhd");
  EXPECT_EQ(empty.rc, 1) << empty.err;
  EXPECT_TRUE(contains(empty.err, "--algorithms 'ring,,rhd': an empty item")) << empty.err;
  const CommandResult twice = run_cli(advise + "--algorithms ring,rhd,ring");
  EXPECT_EQ(twice.rc, 1) << twice.err;
  EXPECT_TRUE(contains(twice.err, "'ring' is listed twice")) << twice.err;
  EXPECT_EQ(run_cli(advise + "--algorithms ring,rhd").rc, 0);
  // NaN passes a range check (every comparison with it is false); inf fails it anyway.
  for (const char* v : {"nan", "NaN", "-nan"}) {
    const CommandResult r = run_cli(advise + "--delay-dist const:1ms --persistence " + v);
    EXPECT_EQ(r.rc, 2) << v << r.err;
    EXPECT_TRUE(contains(r.err, "must be a finite number")) << v << r.err;
  }
  for (const char* v : {"inf", "-inf"})
    EXPECT_EQ(run_cli(advise + "--delay-dist const:1ms --persistence " + v).rc, 2) << v;
  const CommandResult option =
      run_cli("schedule stragglar --ranks 8 --option stragglers=2 --option stragglers=3");
  EXPECT_EQ(option.rc, 1) << option.err;
  EXPECT_TRUE(contains(option.err, "stragglers is given twice")) << option.err;
  const CommandResult align =
      run_cli("lower ring --ranks 4 --bytes 4KiB --align 1099511627776 -o " + path("l.txt"));
  EXPECT_EQ(align.rc, 1) << align.err;
  EXPECT_TRUE(contains(align.err, "above the largest, 4096 B")) << align.err;
  EXPECT_FALSE(std::filesystem::exists(path("l.txt")));
  EXPECT_EQ(run_cli("lower ring --ranks 4 --bytes 4KiB --align 4096").rc, 0);
}

TEST_F(CliGuards, AHugeReduceCostIsAShortError) {
  const std::string topo = file("t.yaml",
                                "kind: switch\nranks: 4\nbandwidth: 100GB/s\nlatency: 1us\n"
                                "provenance: {gamma: 1e300ns/B}\n");
  const std::string runs = data_path("calibration/ring4_measured.csv");
  const CommandResult r = run_cli("validate " + runs + " --topology " + topo);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "must be at most 1s/B")) << r.err;
  EXPECT_LT(r.err.size(), 400u) << r.err;
}

TEST_F(CliGuards, TraceOfAnOverflowingTimeIsTheSameInputError) {
  const std::string sim = file("d.yaml",
                               "topology: {kind: switch, ranks: 4, bandwidth: 1e-310B/s, "
                               "latency: 1us}\ncollective: {algorithm: ring, size: 1MiB}\n"
                               "iterations: 2\n");
  const CommandResult plain = run_cli("simulate " + sim);
  EXPECT_EQ(plain.rc, 1) << plain.err;
  const CommandResult traced = run_cli("simulate " + sim + " --trace " + path("t.json"));
  EXPECT_EQ(traced.rc, 1) << traced.err;
  EXPECT_TRUE(contains(traced.err, "overflows")) << traced.err;
  EXPECT_FALSE(std::filesystem::exists(path("t.json")));
}

// all_reduce_perf's table with one row replaced.
std::string nccl_log(const std::string& row) {
  std::ifstream in(data_path("calibration/nccl_tests_ring8.txt"));
  std::string text, line;
  bool replaced = false;
  while (std::getline(in, line)) {
    if (!replaced && line.find("   4096 ") != std::string::npos) {
      line = row;
      replaced = true;
    }
    text += line + "\n";
  }
  return text;
}

TEST_F(CliGuards, NcclTestsRowsThatDoNotParseAreErrorsNotSkipped) {
  const std::string tail = "    84.38    0.05    0.08       0    84.17    0.05    0.09       0";
  const struct {
    std::string row, message;
  } cases[] = {
      {"          -8          1024     float     sum      -1" + tail,
       "column size: bad value '-8'"},
      {"       8.5          1024     float     sum      -1" + tail, "column size: bad value '8.5'"},
      {"          8K          1024     float     sum      -1" + tail,
       "column size: bad value '8K'"},
      {"        1e30          1024     float     sum      -1" + tail,
       "column size: bad value '1e30'"},
      {"        4096          1024     float     sum      -1    1e-7    0.05    0.08       0    "
       "84.17    0.05    0.09       0",
       "below 1 ps"},
      {"        4096          1024     float     sum      -1    1e308    0.05    0.08       0    "
       "84.17    0.05    0.09       0",
       "above 1e6 s"},
      {"        4096          1024     float    prod      -1" + tail, "redop prod"},
  };
  for (const auto& c : cases) {
    const CommandResult r = run_cli("calibrate " + file("log.txt", nccl_log(c.row)));
    EXPECT_EQ(r.rc, 1) << c.row << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << c.row << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "log.txt:19")) << r.err;
  }
  EXPECT_EQ(run_cli("calibrate " + file("log.txt", nccl_log(""))).rc, 0);
}

// bus_bw = alg_bw x 2(n-1)/n for the config's 8 ranks (rows that disagree are refused).
TEST_F(CliGuards, NcclTestsJsonDuplicatesFractionsAndRankCounts) {
  const std::string row =
      R"({"size": SIZE, "count": 256, "type": "float", "redop": "sum", )"
      R"("out_of_place": {"time": 85.98, "alg_bw": 0.01, "bus_bw": 0.0175, "nwrong": 0}})";
  auto doc = [&](const std::string& size, const std::string& config) {
    std::string r1 = row, r2 = row;
    r1.replace(r1.find("SIZE"), 4, size);
    r2.replace(r2.find("SIZE"), 4, "1048576");
    return "{\"config\": " + config + ", \"results\": [" + r1 + ", " + r2 + "]}";
  };
  const std::string eight = R"({"nthreads": 1, "ngpus": 8, "devices": [{"hostname": "h"}]})";
  const CommandResult ok = run_cli("calibrate " + file("ok.json", doc("1024", eight)));
  EXPECT_EQ(ok.rc, 0) << ok.err;
  const struct {
    std::string text, message;
  } cases[] = {
      {doc("1024.5", eight), "\"size\" is not a whole number"},
      {doc("1024", R"({"nthreads": 1, "ngpus": 70000, "devices": [{"hostname": "h"}]})"),
       "70000 ranks"},
      {doc("1024", R"({"nthreads": 1, "ngpus": 8, "ngpus": 4, "devices": []})"),
       "duplicate key \"ngpus\""},
  };
  for (const auto& c : cases) {
    const CommandResult r = run_cli("calibrate " + file("bad.json", c.text));
    EXPECT_EQ(r.rc, 1) << c.text << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << r.err;
  }
}

}  // namespace
