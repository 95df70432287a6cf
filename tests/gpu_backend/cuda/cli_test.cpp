// `stragglesim-gpu` as a user runs it. Bad input must fail with one clear message on any
// machine; runs that need GPUs skip without them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "gpu_backend/cuda/bootstrap_mpi.hpp"
#include "schema/result_csv.hpp"
#include "tests/experiments/cli_support.hpp"  // run_cli: STRAGGLESIM_BIN is stragglesim-gpu here
#include "tests/gpu_backend/cuda/device_support.hpp"

namespace ssim::gpu {
namespace {

using ssim::testing::run_cli;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GpuCli, RunWithoutADeviceSaysSo) {
  if (testing::gpu_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const auto r = run_cli("run --algo ring --ranks 2");
  EXPECT_EQ(r.rc, 3);  // a resource error: the machine lacks what the run needs
  EXPECT_TRUE(contains(r.err, "stragglesim-gpu: error: no CUDA device: ")) << r.err;
  EXPECT_EQ(r.out, "");
  // The same without --ranks (the GPU count would decide).
  const auto s = run_cli("run --algo nccl");
  EXPECT_NE(s.rc, 0);
  EXPECT_TRUE(contains(s.err, "no CUDA device: ")) << s.err;
}

// Each line: arguments, then the message. All fail before any device is touched.
TEST(GpuCli, BadInputGivesOneClearMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run --algo bogus --ranks 2",
       "unknown algorithm 'bogus' (valid: ring, rhd, direct, tree, dbtree"},
      {"run --algo bogus", ", nccl)"},
      {"run --algo ring --ranks 4 -b 8", "too small for a schedule of 4 chunks"},
      {"run --ranks 2 -b 1X", "invalid size '1X'"},
      {"run --ranks 2 -b 1M -e 1K", "is larger than -e"},
      {"run --ranks 2 -c -1", "-c (checked iterations) must be >= 0, got -1"},
      {"run --ranks 2 -a 4", "-a must be 0 (rank 0), 1 (mean), 2 (min) or 3 (max), got 4"},
      {"run --ranks 2 --dtype fp8", "unknown data type 'fp8'"},
      {"run --ranks 129 -d bf16", "so the exact check allows at most 128 ranks"},
      {"run --ranks 2 --transport mpi", "unknown transport 'mpi'"},
      {"run --ranks 2 --phase1 rs", "unknown phase-1 mode 'rs'"},
      {"run --ranks 2 --launch lazy", "unknown launch mode 'lazy' (expected graph or eager)"},
      {"run --ranks 2 --timeout 0s", "--timeout must be > 0"},
      {"run --ranks 2 --delay 5", "invalid time '5': a unit is required"},
      {"run --ranks 4 --straggler 4", "--straggler must be a rank in [0, 4), got 4"},
      {"run --algo ring --ranks 4 --phase1 nccl-rs", "it names no straggler"},
      {"run --algo nccl --transport single-gpu --ranks 2", "--algo nccl needs --transport nccl"},
      {"run --transport single-gpu", "--transport single-gpu needs --ranks"},
      {"run --rank 0 --nranks 2", "needs all of --rank, --nranks and --id-file"},
      {"run --ranks 2 -O segments", "--option expects KEY=VALUE"},
      {"run --ranks 2 -O segments=4", "algorithm ring has no option 'segments'"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_TRUE(contains(r.err, "stragglesim-gpu: error: ")) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, message)) << args << "\nexpected: " << message << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

// The one error policy (docs/cli.md "Errors, exit codes and resource limits"): a bad command line
// is a usage error, exit 2, with the program's prefix and a pointer to --help, as in stragglesim.
TEST(GpuCli, BadCommandLineIsAUsageError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run --ranks 2 --bogus",
       "The following argument was not expected: --bogus\nRun "
       "'stragglesim-gpu run --help' for usage."},
      {"frobnicate", "Run 'stragglesim-gpu --help' for usage."},
      {"", "A subcommand is required"},
      {"run --ranks x", "Could not convert: --ranks = x"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_EQ(r.err.rfind("stragglesim-gpu: error: ", 0), 0u) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, message)) << args << "\nexpected: " << message << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  EXPECT_EQ(run_cli("--help").rc, 0);
}

TEST(GpuCli, DevicesReportsVersionsWithOrWithoutAGpu) {
  const auto r = run_cli("devices");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "CUDA runtime ")) << r.out;
  EXPECT_TRUE(contains(r.out, "NCCL ")) << r.out;
}

TEST(GpuCli, HelpListsTheRunOptions) {
  const auto r = run_cli("run --help");
  EXPECT_EQ(r.rc, 0);
  for (const char* flag :
       {"-b,--minbytes", "-e,--maxbytes", "-f,--stepfactor", "-n,--iters", "-w,--warmup_iters",
        "-c,--check",    "--algo",        "--ranks",         "--delay",    "--straggler",
        "--dtype",       "--transport",   "--phase1",        "--rank",     "--nranks",
        "--id-file",     "--csv",         "--launch",        "--timeout",  "--timeline"}) {
    EXPECT_TRUE(contains(r.out, flag)) << flag;
  }
}

TEST(GpuCli, FewerGpusThanRanksForTheNcclTransport) {
  SSIM_REQUIRE_GPUS(1);
  const int n = testing::gpu_count() + 1;
  const auto r = run_cli("run --algo ring --transport nccl --ranks " + std::to_string(n));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "the nccl transport runs one rank per GPU: " + std::to_string(n) +
                                  " ranks need " + std::to_string(n) + " GPUs"))
      << r.err;
}

std::string temp_csv() {
  char path[] = "/tmp/ssim_gpu_cli_XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  return path;
}

std::vector<schema::ResultRow> read_rows(const std::string& path) {
  std::ifstream in(path);
  return schema::read_result_csv(in, path);
}

// Sizes 64K, 128K, 256K x 2 iterations = 6 rows; every row checked and exact.
TEST(GpuCli, SingleGpuRunPrintsTheTableAndWritesTheCsv) {
  SSIM_REQUIRE_GPUS(1);
  const std::string csv = temp_csv();
  const auto r = run_cli(
      "run --algo ring --transport single-gpu --ranks 4 -b 64K -e 256K -f 2 "
      "-n 2 -c 2 -w 1 --delay 1ms --csv " +
      csv);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "after-last")) << r.out;
  EXPECT_TRUE(contains(r.out, "# Out of bounds values : 0 OK")) << r.out;
  const std::vector<schema::ResultRow> rows = read_rows(csv);
  ASSERT_EQ(rows.size(), 6u);
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.source, schema::ResultSource::measured);
    EXPECT_EQ(row.algorithm, "ring");
    EXPECT_EQ(row.ranks, 4);
    EXPECT_EQ(row.wrong, std::optional<std::uint64_t>(0));
    EXPECT_EQ(row.straggler, std::optional<int>(3));
    EXPECT_GE(row.time.value, row.delay.value);
  }
  EXPECT_EQ(rows[0].bytes.value, 65536u);
  EXPECT_EQ(rows[5].bytes.value, 262144u);
  std::remove(csv.c_str());
}

// Without --transport a schedule runs on the direct transport (8 ranks on one GPU here when
// the machine has fewer than 8): exact, and the CSV's device column ends with ", direct".
TEST(GpuCli, DirectIsTheDefaultTransport) {
  SSIM_REQUIRE_GPUS(1);
  const std::string csv = temp_csv();
  const int n = testing::gpu_count() >= 8 ? 8 : 8 * testing::gpu_count();
  const auto r = run_cli("run --algo stragglar --ranks " + std::to_string(n) +
                         " -b 1M -e 4M -f 2 -n 2 -c 2 -w 1 --delay 1ms --csv " + csv);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "# Out of bounds values : 0 OK")) << r.out;
  const std::vector<schema::ResultRow> rows = read_rows(csv);
  ASSERT_EQ(rows.size(), 6u);
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.wrong, std::optional<std::uint64_t>(0));
    EXPECT_TRUE(row.device.size() > 8 && row.device.ends_with(", direct")) << row.device;
  }
  std::remove(csv.c_str());
}

// Started by mpirun (built with MPI): rank and size come from MPI. Without GPUs the ranks say
// so, naming themselves; flags that name the rank are refused.
TEST(GpuCli, UnderMpirunRanksComeFromMpi) {
  if (!built_with_mpi()) GTEST_SKIP() << "stragglesim-gpu built without MPI";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  const std::string mpirun =
      "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader "
      "OMPI_MCA_odls_base_sigkill_timeout=0 timeout -k 5 60 mpirun -np 3 ";
  const std::string err = "/tmp/ssim_gpu_mpirun_" + std::to_string(getpid()) + ".err";
  auto run = [&](const std::string& args) {
    const int status = std::system(
        (mpirun + STRAGGLESIM_BIN + " " + args + " </dev/null >/dev/null 2>" + err).c_str());
    std::ifstream in(err);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(err.c_str());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, text);
  };
  const auto bad = run("run --algo ring --rank 0");
  EXPECT_NE(bad.first, 0);
  EXPECT_TRUE(contains(bad.second, "started by mpirun: rank, rank count and NCCL id come from MPI"))
      << bad.second;
  if (testing::gpu_count() > 0) return;
  const auto none = run("run --algo ring");
  EXPECT_EQ(none.first, 3);  // a resource error, passed on by MPI_Abort
  // The first rank to fail ends the job (MPI_Abort), so the others may not get to say it.
  EXPECT_TRUE(std::regex_search(
      none.second, std::regex("stragglesim-gpu: error: rank [0-2] of 3: no CUDA device")))
      << none.second;
}

// Two processes, one GPU each, the NCCL id through a file; rank 0 writes the CSV.
TEST(GpuCli, OneProcessPerGpu) {
  SSIM_REQUIRE_GPUS(2);
  const std::string csv = temp_csv();
  const std::string id = csv + ".id";
  const std::string bin = STRAGGLESIM_BIN;
  const std::string args =
      " run --algo direct --delay 1ms -b 1M -n 3 -c 3 -w 1 --nranks 2 --id-file " + id;
  const std::string cmd = "(" + bin + args + " --rank 1 >/dev/null 2>&1 & " + bin + args +
                          " --rank 0 --csv " + csv + " >/dev/null 2>&1; rc0=$?; wait $!; " +
                          "exit $((rc0 | $?)))";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  const std::vector<schema::ResultRow> rows = read_rows(csv);
  ASSERT_EQ(rows.size(), 3u);
  for (const schema::ResultRow& row : rows) {
    EXPECT_EQ(row.algorithm, "direct");
    EXPECT_EQ(row.ranks, 2);
    EXPECT_EQ(row.wrong, std::optional<std::uint64_t>(0));
  }
  EXPECT_FALSE(std::ifstream(id).good()) << "rank 0 removes the id file";
  std::remove(csv.c_str());
}

}  // namespace
}  // namespace ssim::gpu
