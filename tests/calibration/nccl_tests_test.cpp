// nccl-tests' all_reduce_perf output read as calibration input: the sample logs in
// tests/data/calibration (README.md there says how they were made).
#include "calibration/nccl_tests.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace ssim::calib {
namespace {

std::string data(const std::string& file) {
  std::ifstream in(std::string(STRAGGLESIM_SOURCE_DIR) + "/tests/data/calibration/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::string& text, const std::string& name) {
  try {
    parse_nccl_tests(text, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NcclTests, TextLogOutOfPlaceColumns) {
  const std::string text = data("nccl_tests_ring8.txt");
  ASSERT_TRUE(looks_like_nccl_tests(text));
  const NcclTestsLog log = parse_nccl_tests(text, "ring8.txt");
  EXPECT_FALSE(log.json);
  EXPECT_EQ(log.program, "all_reduce_perf");
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.device, "dgx-h100-07: NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.nccl_version, "2.27.3");
  ASSERT_EQ(log.rows.size(), 10u);
  const NcclTestsRow& first = log.rows.front();
  EXPECT_EQ(first.line, 18);
  EXPECT_EQ(first.bytes, 1024u);
  EXPECT_EQ(first.count, 256u);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_DOUBLE_EQ(first.time_us, 85.98);  // out-of-place, not the in-place 83.46
  EXPECT_DOUBLE_EQ(first.busbw_GBps, 0.02);
  EXPECT_EQ(first.wrong, 0.0);
  EXPECT_DOUBLE_EQ(log.rows.back().time_us, 3413.88);
  EXPECT_EQ(log.rows.back().bytes, 268435456u);
}

TEST(NcclTests, JsonOutputHasTheSameRows) {
  const std::string text = data("nccl_tests_ring8.json");
  ASSERT_TRUE(looks_like_nccl_tests(text));
  const NcclTestsLog json = parse_nccl_tests(text, "ring8.json");
  const NcclTestsLog log = parse_nccl_tests(data("nccl_tests_ring8.txt"), "ring8.txt");
  EXPECT_TRUE(json.json);
  EXPECT_EQ(json.program, "AllReduce");
  EXPECT_EQ(json.ranks, 8);  // one device entry x 1 thread x 8 GPUs
  EXPECT_EQ(json.device, log.device);
  EXPECT_EQ(json.nccl_version, "2.27.3");
  ASSERT_EQ(json.rows.size(), log.rows.size());
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    EXPECT_EQ(json.rows[i].bytes, log.rows[i].bytes);
    EXPECT_NEAR(json.rows[i].time_us, log.rows[i].time_us, 0.005) << i;  // the text rounds
  }
}

// Two processes of 4 GPUs, -c 0 (#wrong N/A), NCCL INFO lines in the table, an
// "NCCL version" line instead of the nccl-tests version header, half precision.
TEST(NcclTests, OlderMultiNodeLogWithInfoLines) {
  const NcclTestsLog log = parse_nccl_tests(data("nccl_tests_two_nodes.txt"), "two.txt");
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.device, "a100-node0: NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(log.nccl_version, "2.21.5");
  ASSERT_EQ(log.rows.size(), 8u);
  EXPECT_EQ(log.rows[0].type, "half");
  EXPECT_EQ(log.rows[0].count, 2048u);
  EXPECT_FALSE(log.rows[0].wrong.has_value());
}

TEST(NcclTests, RunsCarryTheChosenAlgorithmAndSkipWrongRows) {
  NcclTestsLog log = parse_nccl_tests(data("nccl_tests_ring8.txt"), "ring8.txt");
  log.rows[2].wrong = 3;
  log.rows[3].bytes = 0;
  std::vector<SkippedRows> skipped;
  const std::vector<MeasuredRun> runs = nccl_tests_runs(log, "ring8.txt", "tree", {}, skipped);
  ASSERT_EQ(runs.size(), 8u);
  EXPECT_EQ(runs[0].row.algorithm, "tree");
  EXPECT_EQ(runs[0].row.ranks, 8);
  EXPECT_DOUBLE_EQ(runs[0].row.time.value, 85.98e-6);
  EXPECT_EQ(runs[0].row.after_last_arrival, runs[0].row.time);
  EXPECT_EQ(runs[0].row.device, "dgx-h100-07: NVIDIA H100 80GB HBM3, NCCL 2.27.3");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].lines, std::vector<int>{20});
  EXPECT_EQ(skipped[1].lines, std::vector<int>{21});

  // Without device lines the rank count comes from the caller, and a contradiction is an error.
  log.ranks.reset();
  EXPECT_THROW(nccl_tests_runs(log, "x", "ring", {}, skipped), InputError);
  EXPECT_EQ(nccl_tests_runs(log, "x", "ring", 16, skipped).front().row.ranks, 16);
  log.ranks = 8;
  EXPECT_THROW(nccl_tests_runs(log, "x", "ring", 16, skipped), InputError);
}

TEST(NcclTests, BadLogsNameTheLineAndColumn) {
  EXPECT_EQ(error_of(data("nccl_tests_bad_time.txt"), "bad.txt"),
            "bad.txt:20: column time: bad value 'fast' (expected a number >= 0)");
  EXPECT_EQ(error_of(data("nccl_tests_all_gather.txt"), "ag.txt"),
            "ag.txt:2: this is a log of all_gather_perf; calibrate fits AllReduce closed forms "
            "(use all_reduce_perf's output)");
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  EXPECT_EQ(error_of(header + "        1024           256     float     sum\n", "short.txt"),
            "short.txt:2: 4 fields, the header names 9 (size .. out-of-place #wrong)");
  EXPECT_EQ(error_of(header + "# Avg bus bandwidth    : 0\n", "empty.txt"),
            "empty.txt: no result rows in this nccl-tests log (did the run finish?)");
  EXPECT_NE(error_of("        1024  256  float  sum  -1  1.0  1.0  1.0  0\n" + header, "early.txt")
                .find("early.txt:1: a table row before the column header line"),
            std::string::npos);
  EXPECT_NE(error_of("{\"results\": [{\"size\": 8}]}", "j.json").find("no \"out_of_place\""),
            std::string::npos);
  EXPECT_NE(error_of("{\"results\": [", "j.json").find("j.json: not valid JSON"),
            std::string::npos);
  EXPECT_FALSE(looks_like_nccl_tests("bytes,seconds\n1024,1e-6\n"));
}

// Found by fuzz/calibration_csv_fuzz.cpp: a count beyond 2^64 was cast to an integer (undefined
// behaviour) and a size beyond it escaped std::stoull as std::out_of_range.
TEST(NcclTests, HugeSizesAndCountsAreInputErrors) {
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  EXPECT_EQ(error_of(header + "  4096  1" + std::string(108, '0') +
                         "  float  sum  -1  84.3  0.05  0.08  0\n",
                     "count.txt"),
            "count.txt:2: column count: value '1" + std::string(108, '0') + "' is too large");
  EXPECT_EQ(
      error_of(
          header + "  123456789012345678901234567890  256  float  sum  -1  84.3  0.05  0.08  0\n",
          "size.txt"),
      "size.txt:2: column size: value '123456789012345678901234567890' is too large");
  EXPECT_NE(error_of("{\"results\": [{\"size\": 1e30}]}", "j.json").find("\"size\" is too large"),
            std::string::npos);
  EXPECT_NE(
      error_of("{\"config\": {\"devices\": [{}], \"nthreads\": \"x\"}, \"results\": []}", "t.json")
          .find("t.json: config.nthreads: not an integer in [1, 1048576]"),
      std::string::npos);
  EXPECT_NE(error_of("{\"results\": [], \"x\": 1e400}", "o.json")
                .find("o.json: not valid JSON: [json.exception.out_of_range.406] number overflow"),
            std::string::npos);
}

TEST(NcclTests, VersionCodes) {
  EXPECT_EQ(nccl_version_from_code(22703), "2.27.3");
  EXPECT_EQ(nccl_version_from_code(21805), "2.18.5");
  EXPECT_EQ(nccl_version_from_code(2804), "2.8.4");
}

}  // namespace
}  // namespace ssim::calib
