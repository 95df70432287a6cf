// `stragglesim-mpi` as a user runs it: through mpirun, 2-4 ranks on this host, loopback
// transports only. Skipped when configure found no mpirun.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "schema/result_csv.hpp"
#include "tests/mpi_support.hpp"

namespace ssim::gpu {
namespace {

using testing::MpiRunResult;
using MpiResult = MpiRunResult;

MpiResult run_mpi(int ranks, const std::string& args) {
  return testing::run_under_mpirun(STRAGGLESIM_MPIEXEC, ranks, STRAGGLESIM_MPI_BIN, args);
}

int occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1)) ++n;
  return n;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string temp_csv() {
  char path[] = "/tmp/ssim_mpi_csv_XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  return path;
}

std::vector<schema::ResultRow> read_rows(const std::string& path) {
  std::ifstream in(path);
  return schema::read_result_csv(in, path);
}

// Every registered schedule and MPI_Allreduce over the MPI transport, at 3 ranks (not a power of
// two) or 4, alternating down the registry (each schedule's own correctness at every rank count
// is HostExecutor's), on sizes that need padding (1000 B over 3 chunks), with element types in
// turn (half and bfloat16 included; MPI_Allreduce sums those with a user-defined op).
TEST(MpiCli, EveryAlgorithmComputesTheExactSum) {
  SSIM_REQUIRE_MPIRUN();
  std::vector<std::string> names;
  for (const alg::AlgorithmInfo& a : alg::algorithms())
    if (!a.in_network) names.push_back(a.name);  // switch reductions do not lower
  names.emplace_back("mpi");
  const char* dtypes[] = {"float32", "int64", "half", "float64", "int32", "bf16"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int ranks = 3 + static_cast<int>(i % 2);  // every element type at both rank counts
    const std::string args = "--algo " + names[i] + " --dtype " + dtypes[(i / 2) % 6] +
                             " -b 1000 -e 16000 -f 4 -n 2 -w 1";
    const MpiResult r = run_mpi(ranks, args);
    EXPECT_EQ(r.rc, 0) << ranks << " ranks: " << args << "\n" << r.err;
    EXPECT_EQ(occurrences(r.out, "# Out of bounds values : 0 OK"), 1) << ranks << " ranks: " << args << "\n"
                                                                      << r.out;
  }
}

// 4K, 8K, 16K x 2 iterations = 6 rows, in that order, every one checked (-c 2).
TEST(MpiCli, WritesTheResultCsvAndOneTable) {
  SSIM_REQUIRE_MPIRUN();
  const std::string csv = temp_csv();
  const MpiResult r = run_mpi(2, "--algo ring -b 4K -e 16K -f 2 -n 2 -c 2 -w 0 --csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(occurrences(r.out, "# stragglesim-mpi: algorithm ring, 2 ranks"), 1) << r.out;
  // nccl-tests' columns (names, then units), then the time after the last arrival.
  EXPECT_TRUE(contains(r.out,
                       "#       size         count      type   redop    root     time   "
                       "algbw   busbw  #wrong  after-last\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "        4096          1024   float32     sum      -1  ")) << r.out;
  EXPECT_TRUE(contains(r.out, "# results: " + csv)) << r.out;

  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  std::string expected;
  for (const std::string& c : schema::result_csv_columns())
    expected += (expected.empty() ? "" : ",") + c;
  EXPECT_EQ(header, expected);

  const std::vector<schema::ResultRow> rows = read_rows(csv);
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const schema::ResultRow& row = rows[i];
    EXPECT_EQ(row.source, schema::ResultSource::measured);
    EXPECT_EQ(row.algorithm, "ring");
    EXPECT_EQ(row.ranks, 2);
    EXPECT_EQ(row.bytes.value, std::uint64_t{4096} << (i / 2));
    EXPECT_EQ(row.iteration, static_cast<int>(i % 2));
    EXPECT_EQ(row.dtype, "float32");
    EXPECT_EQ(row.delay.value, 0.0);
    EXPECT_FALSE(row.straggler.has_value());
    ASSERT_TRUE(row.wrong.has_value());
    EXPECT_EQ(*row.wrong, 0u);
    EXPECT_GT(row.time.value, 0.0);
    EXPECT_LE(row.after_last_arrival.value, row.time.value);
    EXPECT_EQ(row.device.rfind("mpi:", 0), 0u) << row.device;
    EXPECT_FALSE(row.timestamp.empty());
  }
  std::remove(csv.c_str());
}

// Rank 0 sleeps 50 ms after the barrier, everyone else starts at once. Barrier exits on one
// host differ by far less than 5 ms, so first arrival to last finish is at least 45 ms; after
// the last arrival only a 4 KiB AllReduce is left (microseconds, a few ms when oversubscribed),
// so after_last_arrival_s stays at least 25 ms below time_s.
TEST(MpiCli, StragglerDelayShowsInTimeNotAfterLastArrival) {
  SSIM_REQUIRE_MPIRUN();
  const std::string csv = temp_csv();
  const MpiResult r =
      run_mpi(3, "--algo stragglar --straggler 0 --delay 50ms -b 4K -n 3 -c 3 -w 0 --csv " + csv);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "# straggler: rank 0 arrives 50.000ms late")) << r.out;
  const std::vector<schema::ResultRow> rows = read_rows(csv);
  ASSERT_EQ(rows.size(), 3u);
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.algorithm, "stragglar");
    EXPECT_DOUBLE_EQ(row.delay.value, 0.05);
    EXPECT_EQ(row.straggler, 0);
    EXPECT_GE(row.time.value, 0.045);
    EXPECT_LE(row.after_last_arrival.value, row.time.value - 0.025);
    EXPECT_EQ(row.wrong, 0u);
  }
  std::remove(csv.c_str());
}

// --version answers as stragglesim's and stragglesim-gpu's do (it was "The following argument
// was not expected: --version", exit 2).
TEST(MpiCli, Version) {
  SSIM_REQUIRE_MPIRUN();
  const MpiResult r = run_mpi(1, "--version");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "stragglesim-mpi 0.")) << r.out << r.err;
}

// Each case: ranks, arguments, the message. Every rank exits non-zero, the message appears
// once (from rank 0), no table is printed, and nothing hangs (exit status 124 = timed out).
TEST(MpiCli, BadInputEndsEveryRankWithOneMessage) {
  SSIM_REQUIRE_MPIRUN();
  const std::vector<std::tuple<int, std::string, std::string>> cases = {
      {2, "--algo bogus", "unknown algorithm 'bogus' (valid: ring, "},
      {2, "-b 1X", "invalid size '1X'"},
      {2, "--algo ring -b 4", "too small for a schedule of 2 chunks"},
      {2, "--straggler 2 --delay 1ms", "--straggler must be a rank in [0, 2), got 2"},
      {2, "-c -1", "-c (checked iterations) must be >= 0, got -1"},
      {2, "-o max", "-o/--op 'max': the schedules reduce by sum"},
      {2, "-a 4", "-a must be 0 (rank 0), 1 (mean), 2 (min) or 3 (max), got 4"},
      {2, "-f 4 -i 1K", "-f (size factor) and -i (size increment) exclude each other"},
      {2, "--delay 5", "invalid time '5'"},
      {2, "--algo stragglar", "n >= 3"},
      {1, "--algo ring", "needs at least 2, got 1 (start it with mpirun -np N)"},
      // Only rank 0 opens the CSV: the other ranks learn of its failure and exit too.
      {3, "-b 4K --csv /nonexistent_ssim_dir/runs.csv",
       "cannot write the result CSV --csv /nonexistent_ssim_dir/runs.csv"},
      {3, "-b 4K -J /nonexistent_ssim_dir/runs.json",
       "cannot write the JSON -J /nonexistent_ssim_dir/runs.json"},
  };
  for (const auto& [ranks, args, message] : cases) {
    const MpiResult r = run_mpi(ranks, args);
    EXPECT_NE(r.rc, 0) << args;
    EXPECT_NE(r.rc, 124) << args << ": timed out";
    EXPECT_EQ(occurrences(r.err, "stragglesim-mpi: error: "), 1) << args << "\n" << r.err;
    EXPECT_EQ(occurrences(r.err, message), 1) << args << "\nexpected once: " << message << "\n"
                                              << r.err;
    EXPECT_FALSE(contains(r.out, "# stragglesim-mpi")) << args << "\n" << r.out;
  }
}

// nccl-tests' sweep and output flags: -i adds bytes, -c 3 with -n 2 checks the 2 timed
// iterations and 1 more, -a 3 (max over ranks) is the time column, -J writes the table as
// nccl-tests' JSON, which `stragglesim calibrate` would read.
TEST(MpiCli, NcclTestsFlagsStepCheckAverageAndJson) {
  SSIM_REQUIRE_MPIRUN();
  const std::string csv = temp_csv(), json = temp_csv() + ".json";
  const MpiResult r = run_mpi(
      3, "--algo ring -b 4K -e 12K -i 4K -n 2 -w 1 -c 3 -a 3 -d half --csv " + csv + " -J " + json);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "3 checked per size; time = each rank's own time, max over ranks"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "# JSON: " + json)) << r.out;
  const std::vector<schema::ResultRow> rows = read_rows(csv);
  ASSERT_EQ(rows.size(), 6u);  // 4K, 8K, 12K x 2 timed iterations
  EXPECT_EQ(rows[2].bytes.value, 8192u);
  EXPECT_EQ(rows[4].bytes.value, 12288u);
  EXPECT_EQ(rows[0].dtype, "float16");
  EXPECT_EQ(rows[0].nccl_version, "");
  for (const schema::ResultRow& row : rows) EXPECT_EQ(row.wrong, 0u);  // -c 3 >= -n 2

  // The default -c 1 checks the first timed iteration of each size, as nccl-tests checks one.
  const std::string csv1 = temp_csv();
  ASSERT_EQ(run_mpi(2, "--algo ring -b 4K -n 2 -w 0 --csv " + csv1).rc, 0);
  const std::vector<schema::ResultRow> one = read_rows(csv1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].wrong, 0u);
  EXPECT_FALSE(one[1].wrong.has_value());
  std::remove(csv1.c_str());

  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  const std::string j = text.str();
  EXPECT_TRUE(contains(j, "\"program\": \"stragglesim-mpi\"")) << j;
  EXPECT_TRUE(contains(j, "\"experiment_name\": \"AllReduce\"")) << j;
  EXPECT_TRUE(contains(j, "\"out_of_place\"")) << j;
  EXPECT_TRUE(contains(j, "\"size\": 12288")) << j;
  EXPECT_TRUE(contains(j, "\"validation\": 3")) << j;
  std::remove(csv.c_str());
  std::remove(json.c_str());

  // -c 0: nothing checked, #wrong N/A and the CSV's wrong column empty.
  const std::string csv0 = temp_csv();
  const MpiResult none = run_mpi(2, "--algo rhd -b 4K -n 1 -w 0 -c 0 --csv " + csv0);
  ASSERT_EQ(none.rc, 0) << none.err;
  EXPECT_TRUE(contains(none.out, "     N/A  ")) << none.out;
  const std::vector<schema::ResultRow> unchecked = read_rows(csv0);
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_FALSE(unchecked[0].wrong.has_value());
  std::remove(csv0.c_str());
}

TEST(MpiCli, UnknownFlagIsReportedOnce) {
  SSIM_REQUIRE_MPIRUN();
  const MpiResult r = run_mpi(2, "--bogus-flag");
  EXPECT_EQ(r.rc, 2);  // a usage error (docs/cli.md "Errors, exit codes and resource limits")
  EXPECT_EQ(occurrences(r.err, "--bogus-flag"), 1) << r.err;
  EXPECT_EQ(occurrences(r.err, "stragglesim-mpi: error: "), 1) << r.err;
  EXPECT_TRUE(contains(r.err, "Run 'stragglesim-mpi --help' for usage.")) << r.err;
}

// Bad input keeps exit 1 under mpirun (every rank agrees on the error and exits with it).
TEST(MpiCli, BadInputExitsWithTheInputCode) {
  SSIM_REQUIRE_MPIRUN();
  const MpiResult r = run_mpi(2, "--algo bogus");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(occurrences(r.err, "stragglesim-mpi: error: unknown algorithm 'bogus'"), 1) << r.err;
}

}  // namespace
}  // namespace ssim::gpu
