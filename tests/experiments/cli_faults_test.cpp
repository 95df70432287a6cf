// Fault injection through the built binary: a run killed at random (seeded) points, with SIGKILL
// or SIGINT, and resumed; a disk that fills up at random points, then resumed; two runs started
// at once into one folder. Whatever happens, the folder ends with the results of an
// uninterrupted run or a clean refusal, never with wrong results.* files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "results_compare.hpp"

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

class CliFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/ssim_cli_faults_" +
           std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // 3 points x 3 algorithms = 9 runs of 10 to 300 milliseconds each, small files.
    yaml_ = dir_ + "/exp.yaml";
    std::ofstream(yaml_)
        << "topology: {kind: switch, ranks: 8, bandwidth: 450GiB/s, latency: 3us}\n"
           "algorithms: [stragglar, ring, rhd]\n"
           "size: 64MiB\n"
           "stragglers: {count: 1, delay: {distribution: exponential, mean: 1ms}}\n"
           "iterations: 100\n"
           "seed: 7\n"
           "sweep: {ranks: [64, 128, 256]}\n"
           "delays: {base: {distribution: exponential, mean: 10us}}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The uninterrupted run of `seed`, made once.
  std::string reference(int seed) {
    const std::string out = dir_ + "/full" + std::to_string(seed);
    if (!fs::exists(out + "/results.csv")) {
      const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " --seed " +
                                      std::to_string(seed) + " -j 2 -q --no-plots");
      EXPECT_EQ(r.rc, 0) << r.err;
    }
    return out;
  }

  std::string dir_, yaml_;
};

// Kills (SIGKILL) or interrupts (SIGINT) the run at seeded random points, each time after one to
// three more journal lines, resuming with one or two threads, until it ends by itself.
TEST_F(CliFaults, RandomKillsAndInterruptsThenResume) {
  const std::string full = reference(7);
  std::mt19937 rng(20261126);
  const std::string out = dir_ + "/killed", journal = out + "/journal.jsonl", err = dir_ + "/err";
  const std::size_t full_lines = line_count(full + "/journal.jsonl");
  int kills = 0, interrupts = 0;
  for (int round = 0; round < 12; ++round) {
    std::vector<std::string> args{"run",        yaml_, "-o", out, "-j", round % 2 ? "2" : "1",
                                  "--no-plots", "-q"};
    if (round > 0) args.push_back("--resume");
    const std::size_t target = (round == 0 ? 1 : line_count(journal)) + 1 + rng() % 3;
    const bool sigkill = rng() % 2 == 0;
    const pid_t child = start_cli(args, err);
    std::optional<int> status = wait_for_lines(journal, target, child);
    if (!status) {
      kill(child, sigkill ? SIGKILL : SIGINT);
      int s = 0;
      ASSERT_EQ(waitpid(child, &s, 0), child);
      status = s;
      (sigkill ? kills : interrupts) += 1;
    }
    const std::string text = slurp(err);
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) break;  // it finished first
    if (WIFEXITED(*status)) {
      ASSERT_EQ(WEXITSTATUS(*status), 130) << text;
      EXPECT_TRUE(contains(text, "finish it with: stragglesim run")) << text;
    } else {
      ASSERT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) << text;
    }
    // Never a results file of a run that did not finish. A kill that lands after the last run
    // is in the journal may catch the run between results.csv's rename and results.json's: then
    // results.csv is the finished sweep's, whole (seen on a loaded 2-core CI machine).
    if (line_count(journal) < full_lines) {
      EXPECT_FALSE(fs::exists(out + "/results.csv")) << "round " << round;
      EXPECT_FALSE(fs::exists(out + "/results.json")) << "round " << round;
    } else if (fs::exists(out + "/results.csv")) {
      EXPECT_EQ(slurp(out + "/results.csv"), slurp(full + "/results.csv")) << "round " << round;
    }
  }
  EXPECT_GE(kills + interrupts, 2) << "the runs are too fast to be interrupted; make them slower";
  const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " -j 2 --resume -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "damaged")) << r.err;
  expect_same_results(full, out);
}

// Both shards of a sharded run killed (SIGKILL) part-way, resumed, and merged: the results of
// the uninterrupted unsharded run.
TEST_F(CliFaults, KilledShardsResumeAndMerge) {
  const std::string full = reference(7);
  std::mt19937 rng(2);
  for (int i = 1; i <= 2; ++i) {
    const std::string out = dir_ + "/shard-" + std::to_string(i), shard = std::to_string(i) + "/2";
    const pid_t child =
        start_cli({"run", yaml_, "-o", out, "--shard", shard, "-j", "1", "-q"}, dir_ + "/err");
    if (!wait_for_lines(out + "/journal.jsonl", 2 + rng() % 2, child)) {
      kill(child, SIGKILL);
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
    }
    const CommandResult r =
        run_cli("run " + yaml_ + " -o " + out + " --shard " + shard + " -j 2 --resume -q");
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  const CommandResult m =
      run_cli("merge " + dir_ + "/shard-2 " + dir_ + "/shard-1 -o " + dir_ + "/merged --no-plots");
  ASSERT_EQ(m.rc, 0) << m.err;
  expect_same_results(full, dir_ + "/merged");
}

// The disk fills up at a random point (common/output_file.hpp's writes fail with ENOSPC through
// the test's LD_PRELOAD shim): exit 3, no results files; resumed on a disk with room, the results
// are the uninterrupted run's.
TEST_F(CliFaults, FullDiskAtRandomPointsThenResume) {
  const std::string full = reference(7);
  const std::string journal = slurp(full + "/journal.jsonl");
  const std::size_t header = journal.find('\n') + 1;
  const std::size_t all = journal.size() + slurp(full + "/results.csv").size();
  std::mt19937 rng(7);
  const std::string out = dir_ + "/disk";
  for (int round = 0; round < 4; ++round) {
    // Below what the first run writes (its journal and results.csv); a resumed run writes less
    // and may fit.
    const std::size_t budget = header + rng() % (all - header);
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string saved_asan = asan ? asan : "";
    setenv("LD_PRELOAD", SSIM_ENOSPC_PRELOAD, 1);
    setenv("SSIM_ENOSPC_AFTER", std::to_string(budget).c_str(), 1);
    setenv("SSIM_ENOSPC_MATCH", (out + "/").c_str(), 1);
    // An ASan build would refuse a preloaded library ahead of its runtime.
    setenv("ASAN_OPTIONS",
           (saved_asan + (saved_asan.empty() ? "" : ":") + "verify_asan_link_order=0").c_str(), 1);
    const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " -j 2 -q --no-plots" +
                                    (round > 0 ? " --resume" : ""));
    unsetenv("LD_PRELOAD");
    unsetenv("SSIM_ENOSPC_AFTER");
    unsetenv("SSIM_ENOSPC_MATCH");
    if (asan) {
      setenv("ASAN_OPTIONS", saved_asan.c_str(), 1);
    } else {
      unsetenv("ASAN_OPTIONS");
    }
    EXPECT_FALSE(fs::exists(out + "/.stragglesim.lock"));
    if (r.rc == 0 && round > 0) break;  // what was left fitted
    EXPECT_EQ(r.rc, 3) << "round " << round << ", budget " << budget << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
    EXPECT_FALSE(fs::exists(out + "/results.csv"));
    EXPECT_FALSE(fs::exists(out + "/results.json"));
  }
  const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " -j 2 --resume -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_same_results(full, out);
}

// Two runs with different seeds started at once into one folder. Without --force: one
// finishes, the other is refused (the folder is in use, or holds the first one's finished run).
// With --force (rounds 3-5) the second may also run after the first has finished, replacing its
// results. Either way the folder holds exactly one seed's uninterrupted results, and its journal
// is whole.
TEST_F(CliFaults, TwoRunsIntoOneFolder) {
  const std::string full7 = reference(7), full9 = reference(9);
  for (int round = 0; round < 6; ++round) {
    const std::string out = dir_ + "/both" + std::to_string(round);
    std::vector<std::string> a{"run", yaml_, "-o", out,  "--seed",
                               "7",   "-j",  "1",  "-q", "--no-plots"};
    std::vector<std::string> b{"run", yaml_, "-o", out,  "--seed",
                               "9",   "-j",  "1",  "-q", "--no-plots"};
    if (round >= 3) {
      a.push_back("--force");
      b.push_back("--force");
    }
    const pid_t pa = start_cli(a, dir_ + "/err7");
    const pid_t pb = start_cli(b, dir_ + "/err9");
    int sa = 0, sb = 0;
    ASSERT_EQ(waitpid(pa, &sa, 0), pa);
    ASSERT_EQ(waitpid(pb, &sb, 0), pb);
    ASSERT_TRUE(WIFEXITED(sa) && WIFEXITED(sb));
    const int ra = WEXITSTATUS(sa), rb = WEXITSTATUS(sb);
    const std::string ea = slurp(dir_ + "/err7"), eb = slurp(dir_ + "/err9");
    ASSERT_EQ(std::min(ra, rb), 0) << ea << eb;
    for (const auto& [rc, err] : {std::make_pair(ra, ea), std::make_pair(rb, eb)}) {
      if (rc == 0) continue;
      EXPECT_EQ(rc, 1) << err;
      // The holder is named by pid, or (when it has not written its name within 0.5 s of
      // taking the lock, on a loaded machine) as a process that has not written it yet.
      EXPECT_TRUE(contains(err, "the folder is in use by another stragglesim (") ||
                  (round < 3 && contains(err, "holds an earlier run's files")))
          << err;
    }
    const std::string csv = slurp(out + "/results.csv");
    const bool is7 = csv == slurp(full7 + "/results.csv");
    ASSERT_TRUE(is7 || csv == slurp(full9 + "/results.csv"))
        << "round " << round << ": results of neither run";
    expect_same_results(is7 ? full7 : full9, out);
    const CommandResult again = run_cli("run " + yaml_ + " -o " + out + " --seed " +
                                        (is7 ? "7" : "9") + " --resume -q --no-plots");
    EXPECT_EQ(again.rc, 0) << again.err;
    EXPECT_FALSE(contains(again.err, "damaged")) << again.err;
    EXPECT_FALSE(fs::exists(out + "/.stragglesim.lock"));
  }
}

}  // namespace
}  // namespace ssim::testing
