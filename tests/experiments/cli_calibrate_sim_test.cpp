// `stragglesim calibrate ... --topology-kind shared_device`: the fit by simulation from the CLI,
// its file (which validate reads), and its refusals.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace
}  // namespace ssim::testing
