#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "algorithms/cost_model.hpp"
#include "cli_support.hpp"
#include "experiments/config/config.hpp"
#include "schema/result_csv.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string tmp(const std::string& name) {
  return "/tmp/ssim_cal_" + std::to_string(::getpid()) + "_" + name;
}

// The number printed after `label` (e.g. "alpha      2.9966 us").
double printed(const std::string& out, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(label + " +(-?[0-9][0-9.e+-]*)"))) return NAN;
  return std::stod(m[1]);
}

// tests/data/calibration/p2p_sweep.csv: 30 p2p rows from 3us + bytes / 450 GB/s and 14 reduce
// rows from 4us + 0.05 ns/B * bytes, 1 KiB .. 256 MiB, each with 1% Gaussian noise (README there).
TEST(CliCalibrate, SweepPrintsFitResidualsAndGamma) {
  const CommandResult r = run_cli("calibrate " + data_path("calibration/p2p_sweep.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(point-to-point sweep), 44 rows used")) << r.out;
  EXPECT_NEAR(printed(r.out, "alpha") * 1e-6, 3e-6, 0.01 * 3e-6) << r.out;
  EXPECT_NEAR(printed(r.out, "bandwidth") * 1e9, 450e9, 0.01 * 450e9) << r.out;
  EXPECT_TRUE(contains(r.out, "GiB/s")) << r.out;
  EXPECT_GT(printed(r.out, "R\\^2"), 0.999) << r.out;
  EXPECT_TRUE(contains(r.out, "|relative error|: median ")) << r.out;
  // 30 rows: one residual line each (the last p2p row is on line 31).
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n +31 +268435456 .*%\n"))) << r.out;
  EXPECT_NEAR(printed(r.out, "gamma") * 1e-9, 0.05e-9, 0.01 * 0.05e-9) << r.out;
  EXPECT_NEAR(printed(r.out, "intercept") * 1e-6, 4e-6, 0.02 * 4e-6) << r.out;
}

// Reduce rows over less than a factor of 2 in size: gamma is printed with a warning that it is
// poorly determined (a negative one is an input error, BadInputIsOneClearError).
TEST(CliCalibrate, NarrowReduceSpanWarns) {
  const CommandResult r = run_cli("calibrate " + data_path("calibration/reduce_sizes_narrow.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NEAR(printed(r.out, "gamma") * 1e-9, 0.8e-6 / 131072, 1e-3 * 0.8e-6 / 131072) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "warning: gamma is poorly determined: the reduce rows span only "
                       "1MiB .. 1280KiB (less than a factor of 2)"))
      << r.out;
  // The full sweep (1 KiB .. 256 MiB) has no such warning.
  EXPECT_FALSE(contains(run_cli("calibrate " + data_path("calibration/p2p_sweep.csv")).out,
                        "poorly determined"));
}

TEST(CliCalibrate, ManyRowsPrintQuantilesInstead) {
  // 60 rows (> 50): quantiles of the relative error instead of a table.
  const std::string path = tmp("many.csv");
  {
    std::ofstream out(path);
    out << "bytes,seconds\n";
    for (int i = 0; i < 60; ++i) {
      const double s = 1024.0 * (i + 1);
      out << static_cast<long>(s) << "," << (2e-6 + s / 100e9) * (1 + ((i % 3) - 1) * 0.001)
          << "\n";
    }
  }
  const CommandResult r = run_cli("calibrate " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "relative error quantiles: min ")) << r.out;
  EXPECT_TRUE(contains(r.out, " p50 ")) << r.out;
  EXPECT_FALSE(contains(r.out, "measured       fitted")) << r.out;
}

// tests/data/calibration/ring4_measured.csv: 12 measured ring runs on 4 ranks (1, 16, 256 MiB,
// 4 iterations each) from 6 alpha + 1.5 s beta with alpha 5us, 100 GB/s and 1% noise, plus one
// nccl row.
// tests/data/calibration/nccl_tests_ring8.{txt,json}: all_reduce_perf on 8 GPUs, 1 KiB .. 256
// MiB, out-of-place times from the ring closed form with alpha 6us, 140 GB/s and 1% noise.
TEST(CliCalibrate, NcclTestsLogTextAndJsonGiveTheSameFit) {
  const std::string yaml = tmp("nccl8.yaml");
  const CommandResult text =
      run_cli("calibrate " + data_path("calibration/nccl_tests_ring8.txt") + " -o " + yaml);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "(nccl-tests log), 10 rows used")) << text.out;
  EXPECT_TRUE(contains(text.out, "8 ranks on dgx-h100-07: NVIDIA H100 80GB HBM3, NCCL 2.27.3"));
  EXPECT_NEAR(printed(text.out, "alpha"), 6.0, 0.1);
  EXPECT_NEAR(printed(text.out, "bandwidth"), 140.0, 1.5);
  EXPECT_TRUE(contains(text.out, "wrote " + yaml + ": switch, 8 ranks")) << text.out;
  const experiments::ConfigReader reader(yaml);
  EXPECT_EQ(reader.root().child("provenance").get_string("machine"),
            "dgx-h100-07: NVIDIA H100 80GB HBM3, NCCL 2.27.3");
  std::remove(yaml.c_str());

  const CommandResult json = run_cli("calibrate " + data_path("calibration/nccl_tests_ring8.json"));
  ASSERT_EQ(json.rc, 0) << json.err;
  EXPECT_NEAR(printed(json.out, "alpha"), printed(text.out, "alpha"), 0.001);
  EXPECT_NEAR(printed(json.out, "bandwidth"), printed(text.out, "bandwidth"), 0.01);

  // --algorithm picks the closed form: rhd on 8 ranks has 6 latency terms to ring's 14.
  const CommandResult rhd =
      run_cli("calibrate " + data_path("calibration/nccl_tests_ring8.txt") + " --algorithm rhd");
  ASSERT_EQ(rhd.rc, 0) << rhd.err;
  EXPECT_NEAR(printed(rhd.out, "alpha"), 14.0, 0.3);
  EXPECT_TRUE(contains(rhd.out, "rhd n=8")) << rhd.out;
}

// A header whose nccl-library code is not a version code (negative, huge) leaves the NCCL
// version unknown; it is no error. Fuzz finding: -1e300 was cast to long (UBSan: out of range).
TEST(CliCalibrate, NcclTestsLibraryCodeOutOfRangeIsIgnored) {
  std::ifstream in(data_path("calibration/nccl_tests_ring8.txt"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string original = text.str();
  const std::string code = "nccl-library=22703";
  ASSERT_NE(original.find(code), std::string::npos);
  for (const std::string bad : {"-1e300", "-5", "1e300"}) {
    std::string changed = original;
    changed.replace(changed.find(code), code.size(), "nccl-library=" + bad);
    const std::string path = tmp("nccl_code.txt");
    std::ofstream(path) << changed;
    const CommandResult r = run_cli("calibrate " + path);
    EXPECT_EQ(r.rc, 0) << bad << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "(nccl-tests log), 10 rows used")) << bad << ": " << r.out;
    EXPECT_FALSE(contains(r.out, "NCCL 2.")) << bad << ": " << r.out;
    std::remove(path.c_str());
  }
}

TEST(CliCalibrate, NcclTestsBadInput) {
  const std::string dir = data_path("calibration/");
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {
           Case{"calibrate " + dir + "nccl_tests_bad_time.txt",
                "nccl_tests_bad_time.txt:20: column time: bad value 'fast'"},
           Case{"calibrate " + dir + "nccl_tests_all_gather.txt", "log of all_gather_perf"},
           Case{"calibrate " + dir + "nccl_tests_ring8.txt --algorithm nccl",
                "--algorithm nccl: NCCL's own choice depends on the machine this fit is for"},
           Case{"calibrate " + dir + "nccl_tests_ring8.txt --algorithm nccl_rign",
                "--algorithm: unknown algorithm 'nccl_rign' (did you mean 'nccl_ring'? valid: "
                "ring, "},
           Case{"calibrate " + dir + "ring4_measured.csv --algorithm ring",
                "--algorithm is for nccl-tests logs"},
           Case{"calibrate " + dir + "nccl_tests_ring8.txt --log-ranks 4",
                "the log ran 8 ranks, --log-ranks says 4"},
       }) {
    const CommandResult r = run_cli(c.args);
    EXPECT_EQ(r.rc, 1) << c.args;
    EXPECT_TRUE(contains(r.err, c.message)) << c.args << ": " << r.err;
  }
}

TEST(CliCalibrate, WrittenTopologyLoadsAndValidateReproducesTheRuns) {
  const std::string yaml = tmp("ring4.yaml"), simulated = tmp("sim.csv");
  const CommandResult cal =
      run_cli("calibrate " + data_path("calibration/ring4_measured.csv") + " -o " + yaml);
  ASSERT_EQ(cal.rc, 0) << cal.err;
  EXPECT_TRUE(contains(
      cal.out, "skipped 1 row: algorithm 'nccl' without algo= in its options (NCCL's own choice of "
                    "algorithm depends on the machine being fitted: no closed form) (line 14)"))
      << cal.out;
  EXPECT_TRUE(contains(cal.out, "wrote " + yaml + ": switch, 4 ranks")) << cal.out;

  // The file loads with the topology loader; its numbers are the fit (12 rows at 1% noise:
  // within 2% of the truth).
  const experiments::ConfigReader reader(yaml);
  const topo::Topology t = experiments::load_topology(reader.root(), reader.directory());
  ASSERT_EQ(t.gpu_count(), 4);
  const topo::Route route = t.route(0, 3);
  EXPECT_NEAR(route.latency.value, 5e-6, 0.02 * 5e-6);
  EXPECT_NEAR(route.bandwidth.value, 100e9, 0.02 * 100e9);
  const experiments::ConfigNode p = reader.root().child("provenance");
  EXPECT_EQ(p.get_string("machine"), "synthetic 4-GPU box");  // from the device column
  EXPECT_EQ(p.get_int("rows", std::nullopt, 0, 1000), 12);
  EXPECT_EQ(p.get_int("min_bytes", std::nullopt, 0, 1LL << 40), 1 << 20);
  EXPECT_EQ(p.get_int("max_bytes", std::nullopt, 0, 1LL << 40), 1 << 28);
  EXPECT_LT(p.get_double("residual", std::nullopt, 0, 1), 0.02);
  EXPECT_TRUE(contains(p.get_string("fit"), "least squares"));
  EXPECT_TRUE(std::regex_match(p.get_string("date"),
                               std::regex("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ")));
  EXPECT_TRUE(contains(t.description, "synthetic 4-GPU box")) << t.description;
  ASSERT_TRUE(experiments::load_calibrated_gamma(reader.root()).has_value());
  EXPECT_EQ(experiments::load_calibrated_gamma(reader.root())->value, 0.0);

  // The measured NCCL row is compared with `nccl`, NCCL's choice on the fitted machine (the
  // registry's nccl); the ring rows without it must be reproduced within the noise.
  const CommandResult all = run_cli("validate " + data_path("calibration/ring4_measured.csv") +
                                    " --topology " + yaml);
  ASSERT_EQ(all.rc, 0) << all.err;
  EXPECT_TRUE(contains(all.out, "compared 13 rows, simulated 4 distinct runs")) << all.out;
  EXPECT_TRUE(contains(all.out, "   14  nccl ")) << all.out;
  const std::string rings = tmp("rings.csv");
  {
    std::ifstream in(data_path("calibration/ring4_measured.csv"));
    std::ofstream out(rings);
    for (std::string line; std::getline(in, line);) {
      if (line.find(",nccl,") == std::string::npos) out << line << "\n";
    }
  }
  const CommandResult val = run_cli("validate " + rings + " --topology " + yaml + " -o " + simulated);
  ASSERT_EQ(val.rc, 0) << val.err;
  EXPECT_TRUE(contains(val.out, "compared 12 rows, simulated 3 distinct runs")) << val.out;
  // Simulated with the fitted model, the runs are reproduced within the noise: 1% Gaussian has a
  // median |error| of 0.67% and, over 12 rows, a max below 3%.
  const double median = printed(val.out, "median \\|\\.\\|"),
               max = printed(val.out, "max \\|\\.\\|");
  EXPECT_LT(median, 1.5) << val.out;
  EXPECT_LT(max, 3.0) << val.out;

  // The simulated rows, in the result schema, are the closed form with the calibrated numbers
  // (the alpha-beta simulator matches it to 1e-9): ring on 4 = 6 alpha + 1.5 s beta.
  std::ifstream in(simulated);
  const std::vector<schema::ResultRow> rows = schema::read_result_csv(in, simulated);
  ASSERT_EQ(rows.size(), 12u);
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.source, schema::ResultSource::simulated);
    EXPECT_EQ(row.algorithm, "ring");
    const double model = 6 * route.latency.value +
                         1.5 * static_cast<double>(row.bytes.value) / route.bandwidth.value;
    EXPECT_NEAR(row.after_last_arrival.value, model, 1e-9 * model);
    EXPECT_EQ(row.time, row.after_last_arrival);
    EXPECT_TRUE(contains(row.device, "stragglesim alphabeta on ")) << row.device;
  }
  EXPECT_EQ(rows[5].iteration, 1);
  std::remove(yaml.c_str());
  std::remove(simulated.c_str());
}

TEST(CliCalibrate, ValidateWithAStragglerAndTheFlowModel) {
  // A ring on the 8-GPU DGX H100 file (3us, 450 GiB/s) with rank 7 late by 1 ms: after the
  // last arrival the ring still runs all 14 steps of 3us + 2^27 B / 450 GiB/s (the CLI simulate
  // test derives this); the measured row says exactly that, so the error is 0.
  const std::string path = tmp("straggler.csv");
  const double step = 3e-6 + std::ldexp(1.0, 27) / (450.0 * (1 << 30));
  {
    std::ofstream out(path);
    out << "source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,after_last_"
           "arrival_s,algbw_GBps,"
           "busbw_GBps,wrong,device,timestamp\n";
    out.precision(17);
    out << "measured,ring,8,1073741824,float32,0.001,7,0," << 1e-3 + 14 * step << "," << 14 * step
        << ",1,1,0,box,now\n";
  }
  for (const std::string network : {"alphabeta", "flow"}) {
    const CommandResult r =
        run_cli("validate " + path + " --topology " + std::string(STRAGGLESIM_SOURCE_DIR) +
                "/configs/topologies/dgx_h100.yaml --network " + network);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(contains(r.out, network + " model")) << r.out;
    // Both times, the same quantity on each side: after the last arrival and from the first.
    EXPECT_TRUE(contains(r.out,
                         "after the last arrival: median |.| 0.00%, p95 |.| 0.00%, max "
                         "|.| 0.00%"))
        << r.out;
    EXPECT_TRUE(contains(r.out,
                         "from the first arrival: median |.| 0.00%, p95 |.| 0.00%, max "
                         "|.| 0.00%"))
        << r.out;
  }
  std::remove(path.c_str());
}

TEST(CliCalibrate, ValidateReportsRowsOfOtherRankCounts) {
  const CommandResult r =
      run_cli("validate " + data_path("calibration/ring4_measured.csv") + " --topology " +
              std::string(STRAGGLESIM_SOURCE_DIR) + "/configs/topologies/dgx_h100.yaml");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "no measured row can be compared with")) << r.err;
  EXPECT_TRUE(contains(r.err, "4 ranks (the topology has 8 GPUs)")) << r.err;
}

TEST(CliCalibrate, SweepOutputNeedsRanksAndMachine) {
  const std::string yaml = tmp("sweep.yaml");
  const std::string sweep = "calibrate " + data_path("calibration/p2p_sweep.csv") + " -o " + yaml;
  CommandResult r = run_cli(sweep);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "-o needs --ranks N")) << r.err;
  r = run_cli(sweep + " --ranks 8");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "-o needs --machine TEXT")) << r.err;
  r = run_cli(sweep + " --ranks 8 --topology-kind ring --machine 'node 7, \"A\" rack'");
  ASSERT_EQ(r.rc, 0) << r.err;
  const experiments::ConfigReader reader(yaml);
  const topo::Topology t = experiments::load_topology(reader.root(), reader.directory());
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(reader.root().get_string("kind"), "ring");
  EXPECT_EQ(reader.root().child("provenance").get_string("machine"), "node 7, \"A\" rack");
  // gamma from the reduce rows, recorded for validate.
  const auto gamma = experiments::load_calibrated_gamma(reader.root());
  ASSERT_TRUE(gamma.has_value());
  EXPECT_NEAR(gamma->value, 0.05e-9, 0.01 * 0.05e-9);
  std::remove(yaml.c_str());
}

TEST(CliCalibrate, PiecewiseOutputNeedsAPiece) {
  const std::string yaml = tmp("piece.yaml");
  const std::string base = "calibrate " + data_path("calibration/p2p_sweep.csv") +
                           " --piecewise 64KiB --ranks 8 --machine m -o " + yaml;
  CommandResult r = run_cli(base);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "--piecewise gave 2: choose the one to write with --piece 1..2"))
      << r.err;
  r = run_cli(base + " --piece 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[2] sizes [64KiB, inf)")) << r.out;
  const experiments::ConfigReader reader(yaml);
  EXPECT_EQ(reader.root().child("provenance").get_string("size_range"), "[64KiB, inf)");
  std::remove(yaml.c_str());
}

TEST(CliCalibrate, BadInputIsOneClearError) {
  struct Case {
    std::string args;
    std::string expect;
  };
  const std::string dir = data_path("calibration/");
  const std::vector<Case> cases = {
      {"calibrate " + dir + "missing_column.csv", "missing_column.csv:1: missing column 'seconds'"},
      {"calibrate " + dir + "not_a_number.csv",
       "not_a_number.csv:3: column seconds: bad value 'fast' (expected a time in seconds > 0)"},
      {"calibrate " + dir + "negative.csv", "negative.csv:3: column seconds: bad value '-3.2e-06'"},
      {"calibrate " + dir + "one_size.csv",
       "one_size.csv: 3 rows at 1 distinct size: fitting alpha and beta needs at least 2 distinct "
       "sizes"},
      {"calibrate " + dir + "p2p_sweep.csv --piecewise 1MiB,64KiB",
       "--piecewise: size list '1MiB,64KiB'"},
      {"calibrate " + dir + "ring4_measured.csv --fit-gamma",
       "beta and gamma cannot be told apart"},
      {"calibrate " + dir + "ring4_measured.csv --gamma 1ns/B --fit-gamma", "exclude each other"},
      {"calibrate /nonexistent.csv", "/nonexistent.csv: cannot open file"},
      // Reduce rows at nearly equal sizes whose times fall with the size: the fit's gamma is
      // negative, an input error rather than a printed (and written) negative cost.
      {"calibrate " + dir + "reduce_sizes_nearly_equal.csv",
       "reduce_sizes_nearly_equal.csv: kind=reduce rows: the fitted gamma is -10 ns/B (3 rows, "
       "1048576 .. 1048578 B): the times do not grow with the size"},
      {"validate " + dir + "p2p_sweep.csv --topology " + std::string(STRAGGLESIM_SOURCE_DIR) +
           "/configs/topologies/dgx_h100.yaml",
       "p2p_sweep.csv:1: missing column 'source'"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_cli(c.args);
    EXPECT_EQ(r.rc, 1) << c.args;
    EXPECT_TRUE(contains(r.err, "stragglesim: error: ")) << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace ssim::testing
