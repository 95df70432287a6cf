// `mpirun -np K stragglesim run` as a user runs it (2 and 3 ranks on this host, loopback
// transports only): the same results.csv bytes and results.json (apart from its status and
// output fields) as `--jobs 1`, with --shard and --resume too; a failing run ends every rank
// with the single-process message. Skipped when configure found no mpirun.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_support.hpp"
#include "../results_compare.hpp"
#include "../run_support.hpp"
#include "tests/mpi_support.hpp"

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

CommandResult run_mpi(int ranks, const std::string& args) {
  const MpiRunResult m = run_under_mpirun(STRAGGLESIM_MPIEXEC, ranks, STRAGGLESIM_BIN, args);
  return CommandResult{m.rc, m.out, m.err};
}

int occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1)) ++n;
  return n;
}

// 3 ranks counts x 2 delays x 3 algorithms = 18 runs of unequal cost (ranks^2).
std::string experiment_file(const std::string& dir) {
  return write_run_experiment(dir, "mpi", /*iterations=*/30, /*seed=*/11,
                              "{ranks: [4, 8, 16], delays.base.mean: [10us, 100us]}");
}

std::string temp_dir(const std::string& tag) { return scratch_dir("cli_mpi", tag); }

TEST(CliMpiRun, TwoAndThreeRanksWriteTheSameFilesAsOneThread) {
  SSIM_REQUIRE_MPIRUN();
  const std::string dir = temp_dir("ranks");
  const std::string yaml = experiment_file(dir);
  const CommandResult one = run_cli("run " + yaml + " -o " + dir + "/one -j 1 -q --no-plots");
  ASSERT_EQ(one.rc, 0) << one.err;
  for (int ranks : {2, 3}) {
    const std::string out = dir + "/np" + std::to_string(ranks);
    const CommandResult r = run_mpi(ranks, "run " + yaml + " -o " + out + " -j 1 --no-plots");
    ASSERT_EQ(r.rc, 0) << r.err;
    expect_same_results(dir + "/one", out);
    // Only rank 0 prints: one summary, one banner, one progress line per run.
    EXPECT_EQ(occurrences(r.out, "wrote "), 1) << r.out;
    EXPECT_TRUE(contains(r.err, "18 runs, " + std::to_string(ranks) + " MPI processes")) << r.err;
    EXPECT_EQ(occurrences(r.err, "stragglesim run: "), 1) << r.err;
    EXPECT_EQ(occurrences(r.err, "/18] run "), 18) << r.err;
    // Every rank is ready before a run starts, and each other rank is handed its first runs
    // (two per thread), the largest by estimated cost, before rank 0's threads take theirs: the
    // largest are the 16-rank runs of stragglar and ring (runs 12, 13, 15, 16; rhd moves fewer
    // transfers), so the other ranks run min(4, 2 (ranks - 1)) of them.
    int largest_elsewhere = 0;
    for (const int run : {12, 13, 15, 16}) {
      const std::string head = "] run " + std::to_string(run) + " ranks=16";
      const std::size_t at = r.err.find(head);
      ASSERT_NE(at, std::string::npos) << r.err;
      const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
      for (int rank = 1; rank < ranks; ++rank) {
        const std::string on = " on rank " + std::to_string(rank);
        if (line.ends_with(on) || contains(line, on + "  ETA ")) ++largest_elsewhere;
      }
    }
    EXPECT_EQ(largest_elsewhere, std::min(4, 2 * (ranks - 1))) << r.err;
    // The journal holds every run once.
    const std::string journal = slurp(out + "/journal.jsonl");
    EXPECT_EQ(std::count(journal.begin(), journal.end(), '\n'), 19) << journal;
  }
  fs::remove_all(dir);
}

TEST(CliMpiRun, ShardsAndResumeUnderMpi) {
  SSIM_REQUIRE_MPIRUN();
  const std::string dir = temp_dir("shards");
  const std::string yaml = experiment_file(dir);
  ASSERT_EQ(run_cli("run " + yaml + " -o " + dir + "/one -j 1 -q --no-plots").rc, 0);
  // Two shards, each over 2 ranks, merged.
  for (int i = 1; i <= 2; ++i) {
    const CommandResult r = run_mpi(2, "run " + yaml + " --shard " + std::to_string(i) + "/2 -o " +
                                           dir + "/shard-" + std::to_string(i) + " -j 1 -q");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(occurrences(r.out, "stragglesim merge"), 1) << r.out;
  }
  const CommandResult m =
      run_cli("merge " + dir + "/shard-1 " + dir + "/shard-2 -o " + dir + "/merged --no-plots");
  ASSERT_EQ(m.rc, 0) << m.err;
  expect_same_results(dir + "/one", dir + "/merged");

  // A journal cut after 7 runs (as a kill leaves it), then --resume over 3 ranks: only the
  // 11 missing runs are run, and the files are the uninterrupted run's.
  const std::string full = slurp(dir + "/one/journal.jsonl");
  std::size_t cut = 0;
  for (int line = 0; line < 8; ++line) cut = full.find('\n', cut) + 1;
  fs::create_directories(dir + "/resumed");
  std::ofstream(dir + "/resumed/journal.jsonl") << full.substr(0, cut) << "{\"run\": 9, \"resu";
  const CommandResult r =
      run_mpi(3, "run " + yaml + " -o " + dir + "/resumed -j 1 --resume --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "resuming: 7 of 18 runs already in")) << r.err;
  EXPECT_EQ(occurrences(r.err, "/11] run "), 11) << r.err;
  expect_same_results(dir + "/one", dir + "/resumed");
  fs::remove_all(dir);
}

// Point 1 leaves g2 unreachable: its runs fail wherever they run. Every rank ends, rank 0 alone
// gives the single-process message, and the exit status is not 0.
TEST(CliMpiRun, AFailingRunEndsEveryRankWithTheMessage) {
  SSIM_REQUIRE_MPIRUN();
  const std::string dir = temp_dir("fail");
  fs::create_directories(dir);
  const std::string yaml = dir + "/fail.yaml";
  std::ofstream(yaml) << kFailingPointExperiment;
  const CommandResult one = run_cli("run " + yaml + " -o " + dir + "/one -j 1 -q --no-plots");
  ASSERT_EQ(one.rc, 1);
  for (int ranks : {2, 3}) {
    // A folder per process count: the first one's partial results would be refused as an
    // earlier run's (add --force to replace them).
    const std::string np = "/np" + std::to_string(ranks);
    const CommandResult r = run_mpi(ranks, "run " + yaml + " -o " + dir + np + " -j 1 -q --no-plots");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.rc, 124) << "mpirun hung";
    EXPECT_TRUE(contains(r.err, "run 2 (") && contains(r.err, "ring) failed: no route")) << r.err;
    EXPECT_EQ(occurrences(r.err, "failed: no route"), 1) << r.err;
    EXPECT_TRUE(contains(r.err, "the 2 runs of the 1 sweep point before it are in " + dir + np +
                                    "/results.csv (partial)"))
        << r.err;
    EXPECT_EQ(slurp(dir + np + "/results.csv"), slurp(dir + "/one/results.csv"));
  }
  // A YAML error: one message (rank 0's), not one per rank.
  std::ofstream(dir + "/bad.yaml")
      << "algorithms: [ring]\nsize: 1MiB\ntopology: {kind: switch, ranks: 4, "
         "bandwidth: 1GB/s, latency: 1us}\nsweep: {rnaks: [2, 4]}\n";
  const CommandResult bad = run_mpi(2, "run " + dir + "/bad.yaml -o " + dir + "/bad -q --no-plots");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.rc, 124) << "mpirun hung";
  EXPECT_EQ(occurrences(bad.err, "stragglesim: error:"), 1) << bad.err;
  EXPECT_TRUE(contains(bad.err, "sweep.rnaks")) << bad.err;
  // A helper rank started on another experiment (mpirun's A : B form), or on a YAML it cannot
  // load: refused by rank 0, by name.
  const std::string other = dir + "/other.yaml";
  std::ofstream(other) << "algorithms: [ring]\nsize: 1MiB\ntopology: {kind: switch, ranks: 4, "
                          "bandwidth: 1GB/s, latency: 1us}\n";
  const std::string good = experiment_file(dir);
  for (const std::string& helper : {other, dir + "/missing.yaml"}) {
    // A folder per case: the first case's journal would be refused as an earlier run's.
    const std::string mixed = dir + (helper == other ? "/mixed-other" : "/mixed-missing");
    const CommandResult r =
        run_mpi(1, "run " + good + " -o " + mixed + " -q --no-plots : -np 1 " + STRAGGLESIM_BIN +
                       " run " + helper + " -o " + mixed + " -q");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.rc, 124) << "mpirun hung";
    EXPECT_EQ(occurrences(r.err, "stragglesim: error:"), 1) << r.err;
    EXPECT_TRUE(contains(r.err, helper == other
                                    ? "rank 1 of 2 loaded another experiment than rank 0"
                                    : "rank 1 of 2 could not load the experiment: "))
        << r.err;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
