// validate and calibrate on the committed H200 measurements (data/measured/h200/2026-11-26/):
// the options a run used (recorded, or stated with -O for files that predate the column), the
// two times compared like for like, round-by-round comparison of a timeline, and a fitted gamma
// that never goes negative.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli_support.hpp"
#include "experiments/config/config.hpp"
#include "schema/result_csv.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string tmp(const std::string& name) {
  return "/tmp/ssim_val_" + std::to_string(::getpid()) + "_" + name;
}

std::string h200(const std::string& file) {
  return std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26/" + file;
}

// The signed relative error (percent) validate prints for the first row of `bytes_text` in the
// table, after the last arrival.
double row_error(const std::string& out, const std::string& bytes_text) {
  std::smatch m;
  const std::regex row("\\n +[0-9]+  [a-z_*]+ +" + bytes_text +
                       " +\\S+ \\| +\\S+ +\\S+ +([-+][0-9.]+)%");
  if (!std::regex_search(out, m, row)) return NAN;
  return std::stod(m[1]);
}

// The summary line's median |error| (percent) of one of the two times.
double median_error(const std::string& out, const std::string& which) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(which + ": median \\|\\.\\| ([0-9.]+)%"))) return NAN;
  return std::stod(m[1]);
}

// A topology calibrated on the ring runs (graph launch, no delay): one alpha-beta fit.
std::string ring_topology() {
  static const std::string yaml = [] {
    const std::string path = tmp("ring_fit.yaml");
    const CommandResult r = run_cli("calibrate " + h200("graph-d0-ring.csv") + " -o " + path);
    EXPECT_EQ(r.rc, 0) << r.err;
    return path;
  }();
  return yaml;
}

// The committed hierarchical runs used -O gpus_per_node=4 and do not record it. Simulated with
// the default (one node of 8), the 64 KiB rows come out far too slow; stated with -O they match
// the ring-calibrated model about as well as ring does.
TEST(CliValidate, StatedOptionsBuildTheScheduleThatRan) {
  const std::string base =
      "validate " + h200("graph-d0-hierarchical.csv") + " --topology " + ring_topology();
  const CommandResult wrong = run_cli(base);
  ASSERT_EQ(wrong.rc, 0) << wrong.err;
  EXPECT_TRUE(contains(wrong.out,
                       "note: no options recorded (a file from before the options column) for "
                       "the rows of hierarchical: built with the defaults; state what ran with "
                       "-O ALG:KEY=VALUE"))
      << wrong.out;
  const CommandResult right = run_cli(base + " -O hierarchical:gpus_per_node=4");
  ASSERT_EQ(right.rc, 0) << right.err;
  EXPECT_FALSE(contains(right.out, "note: no options recorded")) << right.out;
  EXPECT_TRUE(contains(right.out, "* hierarchical: gpus_per_node=4")) << right.out;
  const double before = row_error(wrong.out, "64KiB"), after = row_error(right.out, "64KiB");
  EXPECT_GT(before, 40.0) << wrong.out;
  EXPECT_LT(std::fabs(after), 15.0) << right.out;
  // -O names an algorithm whose rows are not in the file: said, not an error.
  const CommandResult unused =
      run_cli(base + " -O rhd:nonpow2=rabenseifner -O hierarchical:gpus_per_node=4");
  EXPECT_EQ(unused.rc, 0) << unused.err;
}

// A file with the options column: each row builds its own schedule, and -O does not override it.
TEST(CliValidate, RecordedOptionsWinOverStatedOnes) {
  const std::string with_column = tmp("hier_options.csv");
  {
    std::ifstream in(h200("graph-d0-hierarchical.csv"));
    const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, "h");
    std::ofstream out(with_column);
    schema::ResultCsvWriter w(out);
    for (schema::ResultRow row : rows) {
      row.options = "gpus_per_node=4";
      row.transport = "single-gpu";
      w.write(row);
    }
  }
  const std::string base = "validate " + with_column + " --topology " + ring_topology();
  const CommandResult recorded = run_cli(base);
  const CommandResult stated =
      run_cli("validate " + h200("graph-d0-hierarchical.csv") + " --topology " + ring_topology() +
              " -O hierarchical:gpus_per_node=4");
  const CommandResult ignored = run_cli(base + " -O hierarchical:gpus_per_node=2");
  ASSERT_EQ(recorded.rc, 0) << recorded.err;
  EXPECT_EQ(row_error(recorded.out, "64KiB"), row_error(stated.out, "64KiB"));
  EXPECT_EQ(row_error(ignored.out, "64KiB"), row_error(recorded.out, "64KiB"));
  EXPECT_TRUE(contains(ignored.out, "note: -O not used")) << ignored.out;
  std::remove(with_column.c_str());
}

TEST(CliValidate, BadOptionsAreOneErrorNamingFileLineAndColumn) {
  const std::string out = tmp("never.csv");
  const std::string file = h200("graph-d0-hierarchical.csv");
  const std::string bad_column = tmp("bad_options.csv");
  {
    std::ifstream in(file);
    const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, "h");
    std::ofstream o(bad_column);
    schema::ResultCsvWriter w(o);
    for (std::size_t i = 0; i < 3; ++i) {
      schema::ResultRow row = rows[i];
      row.options = i == 2 ? "gpus_per_node=5" : "gpus_per_node=4";
      w.write(row);
    }
  }
  struct Case {
    std::string args, expect;
  };
  const std::string topo = " --topology " + ring_topology() + " -o " + out;
  for (const Case& c : std::vector<Case>{
           {"validate " + file + topo + " -O hierarchical:gpus=4",
            "-O hierarchical:gpus=4: algorithm hierarchical has no option 'gpus' (options: "
            "gpus_per_node, "},
           {"validate " + file + topo + " -O hierarchical:gpus_per_node=3",
            "graph-d0-hierarchical.csv:2: -O hierarchical:gpus_per_node=3 (the file has no "
            "options column): "},
           {"validate " + file + topo + " -O hier:gpus_per_node=4",
            "-O hier:gpus_per_node=4: unknown algorithm 'hier'"},
           {"validate " + file + topo + " -O gpus_per_node=4",
            "-O gpus_per_node=4: expected ALG:KEY=VALUE"},
           {"validate " + file + topo + " -O stragglar:straggler=3",
            "the straggler comes from the rows' straggler column"},
           {"validate " + bad_column + topo, "bad_options.csv:4: column options: "},
           {"calibrate " + file + " -O hierarchical:gpus_per_node=3 -o " + out,
            "graph-d0-hierarchical.csv:2: -O hierarchical:gpus_per_node=3"},
           {"validate --topology " + ring_topology(),
            "validate takes a result CSV of measured runs or --timeline FILE"}}) {
    const CommandResult r = run_cli(c.args);
    EXPECT_EQ(r.rc, 1) << c.args;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.args << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args;
  }
  // A malformed options cell is the reader's error, with its column.
  {
    std::ofstream o(bad_column);
    o << "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,"
         "after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device,timestamp,options\n"
         "measured,ring,8,65536,float32,0,,0,1e-4,1e-4,1,1,0,d,t,segments\n";
  }
  const CommandResult r = run_cli("validate " + bad_column + " --topology " + ring_topology());
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err,
                       "bad_options.csv:2: column options: bad value 'segments' "
                       "(expected key=value;...: option 'segments' is not key=value)"))
      << r.err;
  std::remove(bad_column.c_str());
}

// Both times, the same quantity on each side, and the single-gpu arrival skew said once.
TEST(CliValidate, ComparesBothTimesLikeForLike) {
  const std::string sim = tmp("sim.csv");
  const CommandResult r = run_cli("validate " + h200("graph-d5ms-ring.csv") + " --topology " +
                                  ring_topology() + " -o " + sim);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "after the last arrival (last finish - last arrival) and from the "
                       "first arrival (last finish - first arrival)"))
      << r.out;
  const double after = median_error(r.out, "after the last arrival");
  const double first = median_error(r.out, "from the first arrival");
  EXPECT_LT(after, 20.0) << r.out;
  // From the first arrival both sides hold the 5 ms delay, so the relative error is small.
  EXPECT_LT(first, after) << r.out;
  EXPECT_TRUE(contains(r.out, "single-gpu arrival stamps queue behind")) << r.out;
  std::ifstream in(sim);
  const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, sim);
  ASSERT_FALSE(rows.empty());
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.transport, "sim");
    EXPECT_EQ(row.options, std::optional<std::string>(""));
    EXPECT_GT(row.time.value, 0.005);  // from the first arrival: the delay and the ring
    EXPECT_LT(row.after_last_arrival.value, row.time.value - 0.0049);
  }
  std::remove(sim.c_str());
}

// gamma >= 0: on the committed no-delay runs of every algorithm the free fit's gamma is
// negative; calibrate refits with gamma = 0, says so, and writes a file validate accepts.
TEST(CliCalibrate, FittedGammaIsNeverNegativeAndTheFileValidates) {
  const std::string all = tmp("d0_all.csv"), yaml = tmp("d0_all.yaml");
  {
    std::ofstream out(all);
    schema::ResultCsvWriter w(out);
    for (const char* a : {"ring", "rhd", "direct", "tree", "dbtree", "straggler_tree",
                          "halving_doubling", "direct_rs_ag"}) {
      std::ifstream in(h200(std::string("graph-d0-") + a + ".csv"));
      for (const schema::ResultRow& row : schema::read_result_csv(in, a)) w.write(row);
    }
  }
  const CommandResult cal = run_cli("calibrate " + all + " --fit-gamma -o " + yaml);
  ASSERT_EQ(cal.rc, 0) << cal.err;
  EXPECT_TRUE(std::regex_search(
      cal.out, std::regex("note: the unconstrained fit gave gamma -[0-9.e-]+ ns/B < 0; refitted "
                          "alpha and beta with gamma = 0")))
      << cal.out;
  EXPECT_TRUE(contains(cal.out, "gamma      0 ns/B")) << cal.out;
  const experiments::ConfigReader reader(yaml);
  ASSERT_TRUE(experiments::load_calibrated_gamma(reader.root()).has_value());
  EXPECT_EQ(experiments::load_calibrated_gamma(reader.root())->value, 0.0);
  const CommandResult val =
      run_cli("validate " + h200("graph-d0-ring.csv") + " --topology " + yaml);
  EXPECT_EQ(val.rc, 0) << val.err;
  std::remove(all.c_str());
  std::remove(yaml.c_str());
}

// Round by round: a timeline of the H200 ring (2 sizes, 5 iterations) against the ring fit.
TEST(CliValidate, TimelineRoundByRound) {
  const std::string out = tmp("rounds.csv");
  const CommandResult r =
      run_cli("validate --timeline " + data_path("calibration/h200_tl_ring_d0.csv") +
              " --topology " + ring_topology() + " -o " + out);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ring n=8: 2 sizes, 14 rounds")) << r.out;
  EXPECT_TRUE(contains(r.out, "per round (median over ranks and sizes")) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\n +13  allgather +[-+][0-9.]+%"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("16MiB  reduce-scatter +7 "))) << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("\\n  allgather +[0-9.]+% +[-+][0-9.]+% +[0-9.]+%")))
      << r.out;
  // One row per size, rank and round: 2 x 8 x 14.
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "algorithm,ranks,bytes,options,rank,round,phase,measured_end_s,simulated_end_s,"
            "end_error,measured_duration_s,simulated_duration_s,duration_error");
  int rows = 0;
  double last_end = 0;
  while (std::getline(in, line)) {
    ++rows;
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 13u) << line;
    const double measured = std::stod(f[7]), simulated = std::stod(f[8]);
    EXPECT_NEAR(std::stod(f[9]), (simulated - measured) / measured, 1e-12) << line;
    if (f[2] == "16777216" && f[5] == "13") last_end = std::max(last_end, measured);
  }
  EXPECT_EQ(rows, 2 * 8 * 14);
  // The ring's last round ends when the 16 MiB run ends (the committed CSV: about 283 us).
  EXPECT_GT(last_end, 200e-6);
  EXPECT_LT(last_end, 400e-6);
  std::remove(out.c_str());
}

TEST(CliValidate, TimelineThatDoesNotMatchTheScheduleIsOneError) {
  const std::string out = tmp("never_rounds.csv");
  const std::string hier = data_path("calibration/h200_tl_hierarchical_d0.csv");
  // Stated, the hierarchical timeline matches; without its options it does not.
  const CommandResult ok = run_cli("validate --timeline " + hier + " --topology " +
                                   ring_topology() + " -O hierarchical:gpus_per_node=4");
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_TRUE(contains(ok.out, "hierarchical n=8 [gpus_per_node=4]: 1 size, ")) << ok.out;
  struct Case {
    std::string args, expect;
  };
  const std::string four_gpus = tmp("four.yaml");
  std::ofstream(four_gpus) << "kind: switch\nranks: 4\nbandwidth: 100GB/s\nlatency: 5us\n";
  for (const Case& c : std::vector<Case>{
           {"--timeline " + hier + " --topology " + ring_topology(),
            "h200_tl_hierarchical_d0.csv:2: hierarchical on 8 ranks, 1MiB: rank 0 takes part "
            "in round 8, and the timeline has no row for it"},
           {"--timeline " + data_path("calibration/h200_tl_ring_d0.csv") + " --topology " +
                four_gpus,
            "h200_tl_ring_d0.csv:2: column ranks: the timeline has 8 ranks, the topology 4 GPUs"},
           {"--timeline " + data_path("calibration/ring4_measured.csv") + " --topology " +
                ring_topology(),
            "ring4_measured.csv:1: missing column 'rank'"}}) {
    const CommandResult r = run_cli("validate " + c.args + " -o " + out);
    EXPECT_EQ(r.rc, 1) << c.args;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.args << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args;
  }
  // Rank 3's round 5 at 64 KiB dropped from every iteration.
  const std::string cut = tmp("cut.csv");
  {
    std::ifstream in(data_path("calibration/h200_tl_ring_d0.csv"));
    std::ofstream o(cut);
    std::string line;
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::vector<std::string> f;
      for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
      if (f.size() >= 9 && f[2] == "65536" && f[4] == "3" && f[8] == "5") continue;
      o << line << "\n";
    }
  }
  const CommandResult r =
      run_cli("validate --timeline " + cut + " --topology " + ring_topology() + " -o " + out);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err,
                       "cut.csv:2: ring on 8 ranks, 64KiB: rank 3 takes part in round 5, "
                       "and the timeline has no row for it"))
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::remove(cut.c_str());
  std::remove(four_gpus.c_str());
}

}  // namespace
}  // namespace ssim::testing
