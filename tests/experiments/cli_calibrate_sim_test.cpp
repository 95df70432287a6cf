// `stragglesim calibrate ... --topology-kind shared_device`: the fit by simulation from the CLI,
// its file (which validate reads), and its refusals.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/cli_support.hpp"

namespace ssim::testing {
namespace {

const std::string kData = std::string(STRAGGLESIM_SOURCE_DIR) + "/data/measured/h200/2026-11-26/";

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}
bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
std::string tmp(const std::string& name) {
  return "/tmp/ssim_calsim_" + std::to_string(::getpid()) + "_" + name;
}

TEST(CliCalibrateSim, FitsRingAndRhdAndWritesATopologyValidateReads) {
  const std::string yaml = tmp("fit.yaml");
  const std::string rows = tmp("rows.csv");
  const CommandResult r =
      run_cli("calibrate " + kData + "graph-d0-ring.csv " + kData + "graph-d0-rhd.csv " + kData +
              "graph-d5ms-ring.csv --topology-kind shared_device --holdout "
              "'delay_s>0' --rows-output " +
              rows + " -o " + yaml);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "16 runs fitted, 124 held out")) << r.out;
  EXPECT_TRUE(contains(r.out, "fit: converged")) << r.out;
  EXPECT_TRUE(contains(r.out, "memory_bandwidth")) << r.out;
  EXPECT_TRUE(contains(r.out, "copy_factor         2  (fixed)")) << r.out;
  const std::string text = slurp(yaml);
  EXPECT_TRUE(contains(text, "kind: shared_device")) << text;
  EXPECT_TRUE(contains(text, "ranks: 8")) << text;
  EXPECT_TRUE(contains(text, "machine: \"NVIDIA H200, single-gpu\"")) << text;
  EXPECT_TRUE(contains(slurp(rows), "graph-d5ms-ring.csv,")) << slurp(rows);
  // The same seed and rows give the same file (but for its date).
  const std::string yaml2 = tmp("fit2.yaml");
  ASSERT_EQ(
      run_cli("calibrate " + kData + "graph-d0-ring.csv " + kData + "graph-d0-rhd.csv " + kData +
              "graph-d5ms-ring.csv --topology-kind shared_device --holdout "
              "'delay_s>0' -o " +
              yaml2)
          .rc,
      0);
  // The file name (name:) and the date differ; nothing else may.
  auto stable = [](const std::string& text) {
    std::istringstream in(text);
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.rfind("name:", 0) != 0 && line.rfind("  date:", 0) != 0) out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(stable(text), stable(slurp(yaml2)));
  const CommandResult v = run_cli("validate " + kData + "graph-d0-ring.csv --topology " + yaml);
  EXPECT_EQ(v.rc, 0) << v.err;
  for (const std::string& p : {yaml, yaml2, rows}) std::remove(p.c_str());
}

// Every parameter fixed: a prediction of the rows from given values (docs/calibration.md,
// "Predicting another GPU"), nothing fitted, the errors those values give.
TEST(CliCalibrateSim, EveryParameterFixedIsAPrediction) {
  const std::string fixed =
      " --fix memory_bandwidth=4323.81GB/s --fix copy_latency=2.73336us --fix "
      "apply_latency=0.869225us --fix launch_time=0.172383us --fix unaligned_factor=1.30163";
  const CommandResult r = run_cli("calibrate " + kData + "graph-d0-ring.csv " + kData +
                                  "graph-d5ms-ring.csv --topology-kind shared_device --holdout "
                                  "'delay_s>0'" +
                                  fixed);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "fit: none (every parameter fixed: a prediction)")) << r.out;
  EXPECT_TRUE(contains(r.out, "memory_bandwidth    4324 GB/s  (fixed)")) << r.out;
  EXPECT_FALSE(contains(r.out, "(fitted)")) << r.out;
  // A much lower bandwidth is a worse prediction: the errors are those of the given values.
  const CommandResult slow = run_cli(
      "calibrate " + kData + "graph-d0-ring.csv --topology-kind shared_device" +
      std::string(" --fix memory_bandwidth=1000GB/s --fix copy_latency=2.73336us --fix "
                  "apply_latency=0.869225us --fix launch_time=0.172383us --fix "
                  "unaligned_factor=1.30163"));
  ASSERT_EQ(slow.rc, 0) << slow.err;
  auto rms = [](const std::string& out) {
    const auto at = out.find("RMS relative error ");
    return std::stod(out.substr(at + 19));
  };
  EXPECT_GT(rms(slow.out), 2 * rms(r.out)) << slow.out << r.out;
}

TEST(CliCalibrateSim, NodeStructuredAlgorithmsNeedTheirOption) {
  const std::string args = "calibrate " + kData + "graph-d0-ring.csv " + kData +
                           "graph-d0-hierarchical.csv --topology-kind shared_device";
  const CommandResult r = run_cli(args);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "skipped 160 rows: hierarchical depends on its gpus_per_node"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "8 runs fitted")) << r.out;
  const CommandResult g = run_cli(args + " --algorithm-option hierarchical:gpus_per_node=4");
  ASSERT_EQ(g.rc, 0) << g.err;
  EXPECT_TRUE(contains(g.out, "16 runs fitted")) << g.out;
  const CommandResult bad = run_cli(args + " --algorithm-option hierarchical:nodes=4");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "hierarchical has no option 'nodes'")) << bad.err;
}

// A result CSV with an options column: each row is simulated with its own options; -O states
// options only for files without the column.
TEST(CliCalibrateSim, RowsRunWithTheirOwnOptionsColumn) {
  // The stragglar_hier rows twice, recorded as gpus_per_node 4 and 2 (two schedules).
  std::ifstream in(kData + "graph-d0-stragglar_hier.csv");
  std::string header, line, text;
  ASSERT_TRUE(std::getline(in, header));
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 160u);
  text = header + ",options\n";
  for (const char* g : {"gpus_per_node=4", "gpus_per_node=2"}) {
    for (const std::string& l : lines) text += l + "," + g + "\n";
  }
  const std::string csv = tmp("options.csv");
  const std::string rows = tmp("options_rows.csv");
  {
    std::ofstream out(csv);
    out << text;
  }
  const std::string args = "calibrate " + kData + "graph-d0-ring.csv " + csv +
                           " --topology-kind shared_device --rows-output " + rows;
  // No -O needed; -O for a file with the column changes nothing.
  for (const std::string& extra :
       {std::string(), std::string(" -O stragglar_hier:gpus_per_node=8")}) {
    const CommandResult r = run_cli(args + extra);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_FALSE(contains(r.out, "skipped")) << r.out;
    EXPECT_TRUE(contains(r.out, "24 runs fitted")) << r.out;
    // Simulated per line: the 64 KiB rows of each option (lines 2..161 are gpus_per_node=4).
    std::ifstream rin(rows);
    std::string row;
    std::getline(rin, row);
    double four = 0, two = 0;
    while (std::getline(rin, row)) {
      std::vector<std::string> f;
      std::stringstream ss(row);
      std::string cell;
      while (std::getline(ss, cell, ',')) f.push_back(cell);
      ASSERT_EQ(f.size(), 11u) << row;
      if (f[0] != "ssim_calsim_" + std::to_string(::getpid()) + "_options.csv") continue;
      if (f[4] != "65536") continue;
      (std::stoi(f[1]) <= 161 ? four : two) = std::stod(f[8]);
    }
    EXPECT_GT(four, 0);
    EXPECT_GT(two, 0);
    EXPECT_NE(four, two) << "both options simulated as one schedule";
  }
  // The column's own options are checked: the file, line and column are named.
  {
    std::ofstream out(csv);
    out << header << ",options\n" << lines.front() << ",gpus_per_node=3\n";
  }
  const CommandResult bad =
      run_cli("calibrate " + kData + "graph-d0-ring.csv " + csv + " --topology-kind shared_device");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, csv + ":2: column options")) << bad.err;
  for (const std::string& p : {csv, rows}) std::remove(p.c_str());
}

TEST(CliCalibrateSim, RefusesWithOneMessageAndWritesNothing) {
  const std::string yaml = tmp("refused.yaml");
  struct Case {
    std::string args, message;
  };
  const std::string ring = kData + "graph-d0-ring.csv";
  const Case cases[] = {
      // 8 sizes, 5 of them held out: 3 runs left for 3 parameters.
      {ring + " --holdout 'bytes>=4MiB'", "fewer measured points to fit (3"},
      {ring + " --max-evaluations 5", "did not converge within 5 evaluations (best RMS"},
      {ring + " --fix nonsense=1", "unknown parameter 'nonsense' of a shared_device topology"},
      {ring + " --fix copy_latency=-1us", "--fix copy_latency=-1us"},
      {ring + " --holdout 'colour=red'", "unknown column 'colour'"},
      {ring + " --holdout 1.5", "a fraction must be in (0, 1)"},
      {ring + " --fit operation_bandwidth --fix operation_bandwidth=1TB/s",
       "both fixed and fitted"},
  };
  for (const Case& c : cases) {
    const CommandResult r =
        run_cli("calibrate " + c.args + " --topology-kind shared_device -o " + yaml);
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.err, c.message)) << c.args << "\n" << r.err;
    EXPECT_FALSE(exists(yaml)) << c.args;
    std::remove(yaml.c_str());
  }
  // Several files only by simulation.
  const CommandResult r = run_cli("calibrate " + ring + " " + ring);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "several measurement files")) << r.err;
}

// nccl-tests logs fitted on a topology file (calibrate LOG... --topology FILE): table 15's forced
// Ring read from its command line, the NIC bandwidth fitted, the file written with its
// provenance and read back by validate; then the refusals, nothing written.
TEST(CliCalibrateSim, NcclTestsLogsFitATopologyFilesKeys) {
  const std::string p = std::string(STRAGGLESIM_SOURCE_DIR) + "/data/published/nccl-tests/";
  const std::string t15 = p + "15-h100-2node-ib400-ring-minctas24-qps2-1M-8G-nccltests309-cluster2.txt";
  const std::string t01 = p + "01-h100-dgx-1node-8gpu-nvls-8B-16G-nvidia-dgxc.txt";
  const std::string yaml = tmp("logfit.yaml"), rows = tmp("logrows.csv");
  const std::string fixed = " --fix nvlink.bandwidth=483.2GB/s --fix nvlink.latency=3us --fix nic.latency=2us";
  const CommandResult r = run_cli("calibrate " + t15 + " --topology h100_8xib400" + fixed +
                                  " --holdout 'bytes<4MiB' --machine 'cluster 2' --rows-output " + rows + " -o " + yaml);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "simulated with algo=ring;gpus_per_node=8 (NCCL_ALGO=Ring, line 11)")) << r.out;
  EXPECT_TRUE(contains(r.out, "nic.bandwidth                 50 GB/s -> ")) << r.out;
  EXPECT_TRUE(contains(r.out, "fixed (--fix)")) << r.out;
  EXPECT_TRUE(contains(r.out, "fitted    >= 1 MiB: 12 rows")) << r.out;
  EXPECT_TRUE(contains(r.out, "held out  >= 1 MiB: 2 rows")) << r.out;
  const std::string text = slurp(yaml);
  EXPECT_TRUE(contains(text, "kind: hierarchical")) << text;
  EXPECT_TRUE(contains(text, "fitted: nic.bandwidth")) << text;
  EXPECT_TRUE(contains(text, "holdout: bytes<4MiB")) << text;
  EXPECT_TRUE(contains(text, "network: flow")) << text;
  EXPECT_TRUE(contains(slurp(rows), "file,line,bytes,measured_s,simulated_s,error,held_out\n")) << slurp(rows);
  const CommandResult v = run_cli("validate " + t15 + " --topology " + yaml + " --algorithm nccl -O nccl:algo=ring");
  ASSERT_EQ(v.rc, 0) << v.err;
  EXPECT_TRUE(contains(v.out, "sizes >= 1 MiB: out-of-place median |error|")) << v.out;
  std::remove(yaml.c_str());
  std::remove(rows.c_str());
  // NCCL's steps as validate takes them: pipelined by default, per_round on request, said in the
  // output and the written provenance.
  EXPECT_FALSE(contains(r.out, "per-round steps")) << r.out;
  const CommandResult per_round = run_cli("calibrate " + t15 + " --topology h100_8xib400" + fixed +
                                          " --steps per_round --machine m -o " + yaml);
  ASSERT_EQ(per_round.rc, 0) << per_round.err;
  EXPECT_TRUE(contains(per_round.out, "flow model, per-round steps, nccl\n")) << per_round.out;
  EXPECT_TRUE(contains(slurp(yaml), "network: \"flow, steps: per_round\"")) << slurp(yaml);
  std::remove(yaml.c_str());

  struct Case {
    std::string args, message;
  };
  const std::string csv = kData + "graph-d0-ring.csv";
  const Case cases[] = {
      {t01 + " --topology h100_8xib400", "the log ran 8 ranks"},
      {csv + " --topology h100_8xib400", "not an nccl-tests log"},
      {t15 + " --by-simulation", "add --topology FILE"},
      {t15 + " --steps per_round", "--steps: for nccl-tests logs fitted on a topology"},
      {t15 + " --topology h100_8xib400 --fix nic.colour=1", "--fix nic.colour: not a key of"},
      {t15 + " --topology h100_8xib400 --fit nic.bandwidth --fix nic.bandwidth=1GB/s", "both fixed"},
      {t15 + " --topology h100_8xib400 --holdout 'ranks>2'", "unknown column 'ranks'"},
      {t15 + " --topology h100_8xib400 --topology-kind switch", "--topology-kind"},
      {t15 + " --topology h100_8xib400 -O ring:channels=2", "not ring"},
      {t15 + " --topology h100_8xib400 --max-evaluations 3" + fixed, "did not converge within --max-evaluations 3"},
  };
  for (const Case& c : cases) {
    const CommandResult e = run_cli("calibrate " + c.args + " --machine m -o " + yaml);
    EXPECT_EQ(e.rc, 1) << c.args << "\n" << e.out;
    EXPECT_TRUE(contains(e.err, c.message)) << c.args << "\n" << e.err;
    EXPECT_FALSE(exists(yaml)) << c.args;
    std::remove(yaml.c_str());
  }
}

}  // namespace
}  // namespace ssim::testing
