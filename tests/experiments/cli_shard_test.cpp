// `stragglesim run --shard I/N`, `stragglesim merge` and `stragglesim run --resume` through the
// built binary: the same results.csv bytes (and results.json apart from its status and output
// fields) as one uninterrupted run, and a clear refusal for every bad combination.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_support.hpp"
#include "results_compare.hpp"
#include "run_support.hpp"

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

// A small experiment: 3 ranks counts x 2 delays x 3 algorithms = 18 runs, a few hundred
// iterations so a run takes a few milliseconds.
std::string experiment_file(const std::string& dir, const std::string& name = "shards",
                            int iterations = 40) {
  return write_run_experiment(dir, name, iterations, /*seed=*/7,
                              "{ranks: [4, 8, 16], delays.base.mean: [10us, 100us]}");
}

std::string temp_dir(const std::string& tag) { return scratch_dir("cli_shard", tag); }

TEST(CliShard, ThreeShardsMergeToTheSameFilesAsOneRun) {
  const std::string dir = temp_dir("merge");
  const std::string yaml = experiment_file(dir);
  ASSERT_EQ(run_cli("run " + yaml + " -o " + dir + "/full -j 1 -q --no-plots").rc, 0);
  for (int i = 1; i <= 3; ++i) {
    const CommandResult r = run_cli("run " + yaml + " -o " + dir + "/shard-" + std::to_string(i) + " --shard " +
                                    std::to_string(i) + "/3 -j 2 -q --no-plots");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "stragglesim merge")) << r.out;
    EXPECT_FALSE(fs::exists(dir + "/shard-" + std::to_string(i) + "/results.csv"));
  }
  const CommandResult m = run_cli("merge " + dir + "/shard-1 " + dir + "/shard-3 " + dir + "/shard-2 -o " + dir +
                                  "/merged --no-plots");
  ASSERT_EQ(m.rc, 0) << m.err;
  EXPECT_TRUE(contains(m.out, "(18 runs from 3 shards)")) << m.out;
  expect_same_results(dir + "/full", dir + "/merged");
  // Many threads give the same bytes as one.
  ASSERT_EQ(run_cli("run " + yaml + " -o " + dir + "/threads -j 4 -q --no-plots").rc, 0);
  expect_same_results(dir + "/full", dir + "/threads");
  fs::remove_all(dir);
}

TEST(CliShard, MergeNamesMissingForeignAndIncompleteShards) {
  const std::string dir = temp_dir("bad_merge");
  const std::string yaml = experiment_file(dir);
  const std::string other = experiment_file(dir, "other", 41);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_EQ(run_cli("run " + yaml + " -o " + dir + "/s" + std::to_string(i) + " --shard " + std::to_string(i) +
                      "/3 -q")
                  .rc,
              0);
  }
  ASSERT_EQ(run_cli("run " + other + " -o " + dir + "/o2 --shard 2/3 -q").rc, 0);
  CommandResult r = run_cli("merge " + dir + "/s1 " + dir + "/s3 -o " + dir + "/m");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "shard 2 of 3 missing")) << r.err;
  r = run_cli("merge " + dir + "/s1 " + dir + "/o2 " + dir + "/s3 -o " + dir + "/m");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "is not of the same experiment")) << r.err;
  r = run_cli("merge " + dir + "/s1 " + dir + "/s1 " + dir + "/s3 -o " + dir + "/m");
  EXPECT_TRUE(contains(r.err, "shard 1/3 is given twice")) << r.err;
  // Drop shard 2's last two runs: incomplete, named with the command that finishes it.
  const std::string journal = dir + "/s2/journal.jsonl";
  std::string text = slurp(journal);
  for (int k = 0; k < 2; ++k) text.erase(text.rfind('\n', text.size() - 2) + 1);
  std::ofstream(journal, std::ios::trunc) << text;
  r = run_cli("merge " + dir + "/s1 " + dir + "/s2 " + dir + "/s3 -o " + dir + "/m");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "shard 2/3 (" + dir + "/s2): 2 of 6 runs missing")) << r.err;
  EXPECT_TRUE(contains(r.err, "--shard 2/3 -o " + dir + "/s2 --resume")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/m/results.csv"));
  // ... which that command does.
  ASSERT_EQ(run_cli("run " + yaml + " --shard 2/3 -o " + dir + "/s2 --resume -q").rc, 0);
  r = run_cli("merge " + dir + "/s1 " + dir + "/s2 " + dir + "/s3 -o " + dir + "/m --no-plots");
  EXPECT_EQ(r.rc, 0) << r.err;
  fs::remove_all(dir);
}

TEST(CliShard, BadShardFlags) {
  const std::string dir = temp_dir("flags");
  const std::string yaml = experiment_file(dir);
  for (const char* bad : {"0/3", "4/3", "a/b", "3", "1/0", "-1/3"}) {
    const CommandResult r = run_cli("run " + yaml + " -o " + dir + "/x --shard=" + std::string(bad));
    EXPECT_EQ(r.rc, 1) << bad;
    EXPECT_TRUE(contains(r.err, "--shard '" + std::string(bad) + "'")) << bad << ": " << r.err;
  }
  // Slurm arrays count from 0: the message says shards count from 1 and how to shift.
  const CommandResult zero = run_cli("run " + yaml + " -o " + dir + "/x --shard 0/3");
  EXPECT_TRUE(contains(zero.err, "shards count from 1 (1/3 .. 3/3)")) << zero.err;
  EXPECT_TRUE(contains(zero.err, "--shard $((ID+1))/3")) << zero.err;
  const CommandResult r = run_cli("run " + yaml + " -o " + dir + "/none --resume");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "no journal here")) << r.err;
  fs::remove_all(dir);
}

// -q: nothing on stderr (no banner, no progress) for a run that succeeds; the summary stays on
// stdout.
TEST(CliShard, QuietPrintsNothingOnStderr) {
  const std::string dir = temp_dir("quiet");
  const std::string yaml = experiment_file(dir);
  const CommandResult r = run_cli("run " + yaml + " -o " + dir + "/q -q --no-plots");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "wrote ")) << r.out;
  fs::remove_all(dir);
}

// kill -9 in the middle of a run, then --resume: only the missing runs are run, and the files
// are the ones an uninterrupted run writes. A cut-off last journal line is dropped, a damaged
// line before it is run again, a journal of other settings is refused and left as it was.
TEST(CliShard, ResumeAfterKillGivesTheSameFiles) {
  const std::string dir = temp_dir("resume");
  const std::string yaml = experiment_file(dir, "slow", 3000);
  ASSERT_EQ(run_cli("run " + yaml + " -o " + dir + "/full -j 2 -q --no-plots").rc, 0);
  const std::string journal = dir + "/killed/journal.jsonl";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string out = dir + "/killed";
    execl(STRAGGLESIM_BIN, STRAGGLESIM_BIN, "run", yaml.c_str(), "-o", out.c_str(), "-j", "1", "-q", "--no-plots",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for a few finished runs (header + 3 lines), then kill it without warning.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::size_t lines = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = slurp(journal);
    lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    if (lines >= 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_GE(lines, 4u);
  const std::string killed_text = slurp(journal);
  const std::size_t done = static_cast<std::size_t>(std::count(killed_text.begin(), killed_text.end(), '\n'));
  ASSERT_LT(done - 1, 18u) << "the run finished before it was killed; make it slower";
  // A crash mid-write leaves a cut-off line.
  std::ofstream(journal, std::ios::app) << "{\"run\": 17, \"resu";
  const CommandResult r = run_cli("run " + yaml + " -o " + dir + "/killed -j 2 --resume --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "resuming: " + std::to_string(done - 1) + " of 18 runs already in")) << r.err;
  EXPECT_TRUE(contains(r.err, "cut-off last line is ignored")) << r.err;
  expect_same_results(dir + "/full", dir + "/killed");

  // Other settings: refused, the journal untouched.
  const std::string before = slurp(journal);
  CommandResult other = run_cli("run " + yaml + " -o " + dir + "/killed --iterations 7 --resume");
  EXPECT_EQ(other.rc, 1);
  EXPECT_TRUE(contains(other.err, "the journal is of another experiment or settings")) << other.err;
  EXPECT_EQ(slurp(journal), before);
  // A damaged line in the middle is named, and its run is run again.
  std::string text = before;
  text.replace(text.find("\"run\""), 5, "\"r?n\"");
  std::ofstream(journal, std::ios::trunc) << text;
  other = run_cli("run " + yaml + " -o " + dir + "/killed --resume --no-plots");
  EXPECT_EQ(other.rc, 0) << other.err;
  EXPECT_TRUE(contains(other.err, journal + ":2: damaged journal line")) << other.err;
  expect_same_results(dir + "/full", dir + "/killed");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
