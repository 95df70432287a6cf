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
  EXPECT_DOUBLE_EQ(first.out_of_place.time_us, 85.98);  // out-of-place, not the in-place 83.46
  EXPECT_DOUBLE_EQ(first.out_of_place.busbw_GBps, 0.02);
  EXPECT_EQ(first.out_of_place.wrong, 0.0);
  EXPECT_DOUBLE_EQ(log.rows.back().out_of_place.time_us, 3413.88);
  EXPECT_EQ(log.rows.back().bytes, 268435456u);
}

// NCCL_ALGO / NCCL_PROTO set on the log's command line: the first setting with its line, and
// the names as `nccl`'s options take them (a list or an exclusion is no forced algorithm).
TEST(NcclTests, ForcedAlgorithmAndProtocolFromTheCommandLine) {
  std::string text = data("nccl_tests_ring8.txt");
  EXPECT_TRUE(parse_nccl_tests(text, "ring8.txt").nccl_algo.empty());
  text = "mpirun -np 8 -x NCCL_ALGO=Ring -x NCCL_PROTO=LL128 ./all_reduce_perf -b 1K\n"
         "NCCL_ALGO=Tree\n" + text;
  const NcclTestsLog log = parse_nccl_tests(text, "ring8.txt");
  EXPECT_EQ(log.nccl_algo, "Ring");
  EXPECT_EQ(log.nccl_algo_line, 1);
  EXPECT_EQ(log.nccl_proto, "LL128");
  EXPECT_EQ(log.nccl_proto_line, 1);
  EXPECT_EQ(nccl_algo_option("Ring"), "ring");
  EXPECT_EQ(nccl_algo_option("NVLSTree"), "nvls_tree");
  EXPECT_EQ(nccl_algo_option("CollnetDirect"), "collnet_direct");
  EXPECT_EQ(nccl_algo_option("Ring,Tree"), "");
  EXPECT_EQ(nccl_algo_option("^NVLS"), "");
  EXPECT_EQ(nccl_proto_option("LL128"), "ll128");
  EXPECT_EQ(nccl_proto_option("Simple"), "simple");
  EXPECT_EQ(nccl_proto_option("LL,Simple"), "");
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
    // the text rounds
    EXPECT_NEAR(json.rows[i].out_of_place.time_us, log.rows[i].out_of_place.time_us, 0.005) << i;
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
  EXPECT_FALSE(log.rows[0].out_of_place.wrong.has_value());
}

TEST(NcclTests, RunsCarryTheChosenAlgorithmAndSkipWrongRows) {
  NcclTestsLog log = parse_nccl_tests(data("nccl_tests_ring8.txt"), "ring8.txt");
  log.rows[2].out_of_place.wrong = 3;
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

  // Without a rank count the caller's must be one the rows allow, and a contradiction is an
  // error.
  log.ranks.reset();
  log.rows_min_ranks = 8;
  log.rows_max_ranks = 9;
  EXPECT_THROW(nccl_tests_runs(log, "x", "ring", {}, skipped), InputError);
  EXPECT_EQ(nccl_tests_runs(log, "x", "ring", 9, skipped).front().row.ranks, 9);
  EXPECT_THROW(nccl_tests_runs(log, "x", "ring", 16, skipped), InputError);
  log.ranks = 8;
  EXPECT_THROW(nccl_tests_runs(log, "x", "ring", 16, skipped), InputError);
}

TEST(NcclTests, BadLogsNameTheLineAndColumn) {
  EXPECT_EQ(error_of(data("nccl_tests_bad_time.txt"), "bad.txt"),
            "bad.txt:20: column time: bad value 'fast' (expected a number >= 0)");
  EXPECT_EQ(error_of(data("nccl_tests_all_gather.txt"), "ag.txt"),
            "ag.txt:2: this is a log of all_gather_perf, not of all_reduce_perf: stragglesim "
            "compares and fits AllReduce (use all_reduce_perf's output)");
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

std::string published(const std::string& file) {
  std::ifstream in(std::string(STRAGGLESIM_SOURCE_DIR) + "/data/published/nccl-tests/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
const std::string kTable01 = "01-h100-dgx-1node-8gpu-nvls-8B-16G-nvidia-dgxc.txt";
const std::string kTable11 = "11-h100-2node-ib400-default-1M-8G-nccltests309-cluster2.txt";
const std::string kTable15 =
    "15-h100-2node-ib400-ring-minctas24-qps2-1M-8G-nccltests309-cluster2.txt";

// data/published/nccl-tests: table 01 lists its 8 devices; 11 and 15 list 2 of their 16 (ranks
// 0 and 15), so the count comes from busbw/algbw = 2(n-1)/n = 1.875.
TEST(NcclTests, PublishedTablesGiveTheirRankCount) {
  const NcclTestsLog t01 = parse_nccl_tests(published(kTable01), "01.txt");
  EXPECT_EQ(t01.ranks, 8);
  EXPECT_EQ(t01.ranks_from, NcclTestsRanksFrom::device_lines);
  EXPECT_FALSE(t01.listing_shortened);
  ASSERT_EQ(t01.rows.size(), 32u);
  EXPECT_EQ(t01.rows.front().bytes, 8u);
  ASSERT_TRUE(t01.rows.front().in_place.has_value());
  EXPECT_DOUBLE_EQ(t01.rows.front().in_place->time_us, 13.03);
  EXPECT_DOUBLE_EQ(t01.rows.back().in_place->busbw_GBps, 479.99);
  EXPECT_EQ(t01.device, "pool0-01806: NVIDIA H100 80GB HBM3");
  for (const std::string& file : {kTable11, kTable15}) {
    const NcclTestsLog t = parse_nccl_tests(published(file), file);
    EXPECT_EQ(t.device_lines, 2) << file;
    EXPECT_TRUE(t.listing_shortened) << file;
    EXPECT_EQ(t.ranks, 16) << file;
    EXPECT_EQ(t.ranks_from, NcclTestsRanksFrom::bandwidths) << file;
    EXPECT_EQ(t.rows.size(), 14u) << file;
    EXPECT_NE(describe_ranks(t).find("16 ranks (busbw/algbw = 2(n-1)/n, fixed at line "),
              std::string::npos)
        << describe_ranks(t);
    EXPECT_NE(describe_ranks(t).find("the device listing is shortened"), std::string::npos);
  }
  // Table 15 keeps its command line: the program comes from it.
  EXPECT_EQ(parse_nccl_tests(published(kTable15), "15.txt").program, "all_reduce_perf");
  std::vector<SkippedRows> skipped;
  const NcclTestsLog t15 = parse_nccl_tests(published(kTable15), "15.txt");
  EXPECT_EQ(nccl_tests_runs(t15, "15.txt", "ring", {}, skipped).front().row.ranks, 16);
  EXPECT_THROW(nccl_tests_runs(t15, "15.txt", "ring", 8, skipped), InputError);
}

// The rows' busbw/algbw within print rounding: 0.01/0.02 allows any n >= 2, 0.19/0.34 n = 8..14
// (0.20/0.35 in place: 7..11), 0.78/1.36 only n = 8.
TEST(NcclTests, RankCountFromTheRowsWithoutDeviceLines) {
  std::string text = data("nccl_tests_ring8.txt");
  std::string bare;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#  Rank", 0) != 0) bare += line + "\n";
  }
  const NcclTestsLog log = parse_nccl_tests(bare, "bare.txt");
  EXPECT_EQ(log.device_lines, 0);
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.ranks_from, NcclTestsRanksFrom::bandwidths);
  EXPECT_EQ(log.ranks_line, 13);  // 64 KiB: 0.78 / 1.36 is the first row that allows n = 8 only

  // Only the three smallest rows: too coarse for one count.
  std::string coarse;
  std::istringstream in2(bare);
  int kept = 0;
  for (std::string line; std::getline(in2, line);) {
    const bool row = !line.empty() && line[0] == ' ' && line.find("float") != std::string::npos;
    if (!row || ++kept <= 3) coarse += line + "\n";
  }
  const NcclTestsLog c = parse_nccl_tests(coarse, "coarse.txt");
  EXPECT_FALSE(c.ranks.has_value());
  EXPECT_EQ(c.rows_min_ranks, 8);
  EXPECT_EQ(c.rows_max_ranks, 11);
}

// Issue 39's bad input: rows that disagree with the log's own rank count, with each other, and
// logs of other collectives, each one message naming the file, line and values.
TEST(NcclTests, RowsThatDisagreeWithTheRankCountAreErrors) {
  // The listing says 4 ranks (ranks 0-3), the rows were measured on 8.
  std::string four;
  std::istringstream in(data("nccl_tests_ring8.txt"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#  Rank  4", 0) == 0 || line.rfind("#  Rank  5", 0) == 0 ||
        line.rfind("#  Rank  6", 0) == 0 || line.rfind("#  Rank  7", 0) == 0)
      continue;
    four += line + "\n";
  }
  EXPECT_EQ(error_of(four, "four.txt"),
            "four.txt:15: in-place busbw 0.09 / algbw 0.05 = 1.8, 2(n-1)/n for n >= 5; the log's "
            "device lines (line 6) list 4 ranks: the rows disagree with the log's rank count");

  // No listing; one row says 16 ranks, the rows before it 8.
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  const std::string rows =
      header +
      "     1048576        262144     float     sum      -1    96.61   10.85   18.99       0\n"
      "     4194304       1048576     float     sum      -1    93.25   44.98   84.34       0\n";
  EXPECT_EQ(error_of(rows, "mixed.txt"),
            "mixed.txt:3: busbw 84.34 / algbw 44.98 = 1.875, 2(n-1)/n for n = 16; the rows before "
            "it allow n = 8 (line 2): the rows disagree on the rank count");

  // The listing is shortened (ranks 0 and 15): the rows must allow at least 16.
  const std::string shortened =
      "#  Rank  0 Group  0 Pid  1 on a device  0 [0000:1b:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank 15 Group  0 Pid  2 on b device  7 [0001:4e:00] NVIDIA H100 80GB HBM3\n" +
      header +
      "     1048576        262144     float     sum      -1    96.61   10.85   18.99       0\n";
  EXPECT_EQ(error_of(shortened, "short.txt"),
            "short.txt:4: busbw 18.99 / algbw 10.85 = 1.75, 2(n-1)/n for n = 8; the rows before "
            "it and the device listing allow n >= 16 (line 1): the rows disagree on the rank "
            "count");

  // all_gather_perf without its "Collective test starting" line: redop none.
  EXPECT_EQ(error_of(header + "     1048576        262144     float    none      -1    50.00   "
                              "20.97   18.35       0\n",
                     "ag.txt"),
            "ag.txt:2: redop none: a collective without a reduction (all_gather_perf, "
            "alltoall_perf, broadcast_perf, ...); stragglesim reads AllReduce logs "
            "(all_reduce_perf -o sum)");
  // reduce_scatter_perf: sum, root -1, but busbw = algbw (n-1)/n.
  EXPECT_EQ(error_of(header + "     1048576        262144     float     sum      -1    50.00   "
                              "20.97   18.35       0\n",
                     "rs.txt"),
            "rs.txt:2: busbw 18.35 / algbw 20.97 = 0.8751, below 1, which AllReduce's 2(n-1)/n is "
            "for no n (it is 0 or >= 1); (n-1)/n is what all_gather_perf and reduce_scatter_perf "
            "print: not an AllReduce log");
  // reduce_perf: root 0.
  EXPECT_EQ(error_of(header + "     1048576        262144     float     sum       0    50.00   "
                              "20.97   20.97       0\n",
                     "r.txt"),
            "r.txt:2: root 0: all_reduce_perf prints root -1; a rooted collective (reduce_perf, "
            "broadcast_perf) is not AllReduce");
  // A command line kept with the log names the program.
  EXPECT_EQ(error_of("mpirun -np 16 ./build/all_gather_perf -b 1M -e 8G\n" + header +
                         "     1048576        262144     float     sum      -1    96.61   10.85   "
                         "18.99       0\n",
                     "cmd.txt"),
            "cmd.txt:1: this is a log of all_gather_perf, not of all_reduce_perf: stragglesim "
            "compares and fits AllReduce (use all_reduce_perf's output)");
  // JSON: the config's count against the rows.
  std::string json = data("nccl_tests_ring8.json");
  ASSERT_NE(json.find("\"ngpus\":8,"), std::string::npos);
  json.replace(json.find("\"ngpus\":8,"), 10, "\"ngpus\":2,");
  EXPECT_NE(error_of(json, "j.json")
                .find("config.devices x nthreads x ngpus says 2 ranks: the rows "
                      "disagree with the log's rank count"),
            std::string::npos)
      << error_of(json, "j.json");
}

// Several processes per node and several GPUs per process read the same: one device line per
// rank either way (nccl-tests gathers every process's lines), and JSON counts devices x
// nthreads x ngpus.
TEST(NcclTests, GpusPerProcessAndProcessesPerNodeReadTheSame) {
  const NcclTestsLog one_process = parse_nccl_tests(data("nccl_tests_ring8.txt"), "g8.txt");
  const NcclTestsLog two_processes = parse_nccl_tests(data("nccl_tests_two_nodes.txt"), "p2.txt");
  const NcclTestsLog json = parse_nccl_tests(data("nccl_tests_ring8.json"), "g8.json");
  EXPECT_EQ(one_process.ranks, 8);
  EXPECT_EQ(two_processes.ranks, 8);
  EXPECT_EQ(json.ranks, 8);
  EXPECT_EQ(json.ranks_from, NcclTestsRanksFrom::json_config);
  ASSERT_TRUE(json.rows.front().in_place.has_value());
  EXPECT_NEAR(json.rows.front().in_place->time_us, one_process.rows.front().in_place->time_us,
              0.005);
}

TEST(NcclTests, VersionCodes) {
  EXPECT_EQ(nccl_version_from_code(22703), "2.27.3");
  EXPECT_EQ(nccl_version_from_code(21805), "2.18.5");
  EXPECT_EQ(nccl_version_from_code(2804), "2.8.4");
}

}  // namespace
}  // namespace ssim::calib
