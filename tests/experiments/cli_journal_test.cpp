// The journal, the output folder and signals through the built binary (docs/cli.md,
// "Crash-safe, sharded and MPI runs" and "Errors"): damaged journals are named by FILE:LINE, re-run
// by
// --resume and refused by merge; a folder in use or holding an earlier run is refused; SIGINT
// and SIGTERM stop cleanly with the --resume command. Every case checks what is on disk after.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "cli_support.hpp"
#include "results_compare.hpp"
#include "run_support.hpp"

namespace ssim::testing {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& tag) {
  const std::string dir = scratch_dir("cli_journal", tag);
  fs::create_directories(dir);
  return dir;
}

// 2 points x 3 algorithms = 6 runs.
std::string experiment_file(const std::string& dir, int iterations = 12) {
  return write_run_experiment(dir, "exp", iterations, /*seed=*/7, "{ranks: [4, 8]}");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// The journal's checksum (experiments/runner/journal.cpp), recomputed: FNV-1a 64 of `salt` then the
// line's text before ,"check":"...". Used to make lines whose checksum passes but whose content
// is wrong, so that the checks behind the checksum are tested too.
std::string with_check(const nlohmann::json& object, const std::string& salt) {
  const std::string text = object.dump();
  const std::string body = text.substr(0, text.size() - 1);
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : salt + body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return body + ",\"check\":\"" + hex + "\"}";
}

nlohmann::json without_check(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line);
  j.erase("check");
  return j;
}

class CliJournal : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    yaml_ = experiment_file(dir_);
    full_ = dir_ + "/full";
    // One thread: the journal's lines in run order (run r on line r + 2).
    const CommandResult r = run_cli("run " + yaml_ + " -o " + full_ + " -j 1 -q --no-plots");
    ASSERT_EQ(r.rc, 0) << r.err;
    journal_ = slurp(full_ + "/journal.jsonl");
    ASSERT_EQ(lines_of(journal_).size(), 7u);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A folder holding the full run's journal changed by `edit`, and no results.
  std::string damaged(const std::string& name,
                      const std::function<void(std::vector<std::string>&)>& edit) {
    const std::string out = dir_ + "/" + name;
    fs::create_directories(out);
    std::vector<std::string> lines = lines_of(journal_);
    edit(lines);
    write_file(out + "/journal.jsonl", joined_lines(lines));
    return out;
  }

  // --resume on `out`: exit 0, `expect` on stderr, the full run's results, and a journal that a
  // second --resume finds whole.
  void expect_resume_repairs(const std::string& out, const std::string& expect) {
    const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " -j 2 --resume --no-plots");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(contains(r.err, expect)) << r.err;
    EXPECT_TRUE(contains(r.err, "ignored: their runs are run again")) << r.err;
    expect_same_results(full_, out);
    const CommandResult again =
        run_cli("run " + yaml_ + " -o " + out + " -j 2 --resume --no-plots");
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_FALSE(contains(again.err, "damaged")) << again.err;
    EXPECT_TRUE(contains(again.err, "resuming: 6 of 6 runs")) << again.err;
    expect_same_results(full_, out);
  }

  std::string fingerprint() const {
    return nlohmann::json::parse(lines_of(journal_)[0])["fingerprint"];
  }

  std::string dir_, yaml_, full_, journal_;
};

TEST_F(CliJournal, SwappedRunIdsAndAlgorithmsAreRunAgain) {
  // The run ids of lines 2 and 3 swapped: each line still parses, neither checksum passes.
  std::string out = damaged("swap_runs", [](std::vector<std::string>& l) {
    const std::size_t a = l[1].find("\"run\":"), b = l[2].find("\"run\":");
    const std::string ra = l[1].substr(a, l[1].find(',', a) - a),
                      rb = l[2].substr(b, l[2].find(',', b) - b);
    ASSERT_NE(ra, rb);
    l[1].replace(a, ra.size(), rb);
    l[2].replace(b, rb.size(), ra);
  });
  expect_resume_repairs(out, out + "/journal.jsonl:2: damaged journal line: checksum mismatch");
  // Two lines' algorithm names swapped, checksums recomputed: the identity check fails.
  out = damaged("swap_algorithms", [this](std::vector<std::string>& l) {
    nlohmann::json a = without_check(l[1]), b = without_check(l[2]);
    ASSERT_NE(a["algorithm"], b["algorithm"]);
    std::swap(a["algorithm"], b["algorithm"]);
    l[1] = with_check(a, fingerprint() + "\n");
    l[2] = with_check(b, fingerprint() + "\n");
  });
  expect_resume_repairs(out, out + "/journal.jsonl:3: damaged journal line: run ");
}

TEST_F(CliJournal, DuplicatedNegativeFractionalAndShortLinesAreRunAgain) {
  std::string out = damaged("dup", [](std::vector<std::string>& l) { l.push_back(l[3]); });
  expect_resume_repairs(out, out + "/journal.jsonl:8: run ");
  out = damaged("negative", [this](std::vector<std::string>& l) {
    nlohmann::json j = without_check(l[4]);
    j["result"]["iterations"][2][1] = -1.0;
    l[4] = with_check(j, fingerprint() + "\n");
  });
  expect_resume_repairs(out, out +
                                 "/journal.jsonl:5: damaged journal line: iteration 2: completion: "
                                 "-1.0 is not a finite number >= 0");
  out = damaged("fraction", [this](std::vector<std::string>& l) {
    nlohmann::json j = without_check(l[2]);
    j["run"] = 1.5;
    l[2] = with_check(j, fingerprint() + "\n");
  });
  expect_resume_repairs(
      out, out + "/journal.jsonl:3: damaged journal line: \"run\": 1.5 is not an integer");
  out = damaged("short", [this](std::vector<std::string>& l) {
    nlohmann::json j = without_check(l[6]);
    j["result"]["iterations"].erase(3);
    l[6] = with_check(j, fingerprint() + "\n");
  });
  expect_resume_repairs(out, out +
                                 "/journal.jsonl:7: damaged journal line: \"iterations\" holds 11 "
                                 "iterations, the experiment runs 12");
}

TEST_F(CliJournal, DamagedOrForeignHeadersAreRefusedNamingTheLine) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    bool recheck;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"seed", [](nlohmann::json& h) { h["seed"] = "8"; }, false,
       ":1: damaged journal header: checksum mismatch"},
      {"seed_rechecked", [](nlohmann::json& h) { h["seed"] = "8"; }, true,
       "the journal is of another experiment or settings"},
      {"iterations", [](nlohmann::json& h) { h["iterations"] = 11; }, true,
       "the journal is of another experiment or settings"},
      {"shard_1_0",
       [](nlohmann::json& h) {
         h["shard"] = {1, 0};
       },
       true, "\"shard\": [1,0] is not [I, K]"},
      {"runs_0", [](nlohmann::json& h) { h["runs"] = 0; }, true, "\"runs\": 0"},
      {"runs_negative", [](nlohmann::json& h) { h["runs"] = -6; }, true,
       "\"runs\": -6 is not an integer"},
      {"format_1", [](nlohmann::json& h) { h["stragglesim_journal"] = 1; }, true,
       ":1: journal format 1 (written by stragglesim "},
  };
  for (const Case& c : cases) {
    const std::string out = damaged(c.name, [&](std::vector<std::string>& l) {
      nlohmann::json h = without_check(l[0]);
      c.edit(h);
      l[0] = c.recheck
                 ? with_check(h, "")
                 : h.dump().substr(0, h.dump().size() - 1) + l[0].substr(l[0].rfind(",\"check\""));
    });
    const std::string before = slurp(out + "/journal.jsonl");
    const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " --resume --no-plots -q");
    EXPECT_EQ(r.rc, 1) << c.name << ": " << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.name << ": " << r.err;
    EXPECT_EQ(slurp(out + "/journal.jsonl"), before) << c.name;
    EXPECT_FALSE(fs::exists(out + "/results.csv")) << c.name;
  }
}

TEST_F(CliJournal, MergeRefusesDamagedShardsAndOutOfRangeHeaders) {
  for (int i = 1; i <= 2; ++i) {
    const CommandResult r = run_cli("run " + yaml_ + " -o " + dir_ + "/s" + std::to_string(i) +
                                    " --shard " + std::to_string(i) + "/2 -q");
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  const std::string j1 = dir_ + "/s1/journal.jsonl", j2 = dir_ + "/s2/journal.jsonl";
  const std::string s1 = slurp(j1), s2 = slurp(j2);
  const std::string merge = "merge " + dir_ + "/s1 " + dir_ + "/s2 -o " + dir_ + "/m --no-plots";
  // A line of shard 2 in shard 1's journal: named, nothing written, the command that repairs it.
  // (Shard 2's runs finish in either order under --jobs 2: its line names the run it holds.)
  const std::string moved = lines_of(s2)[1];
  const int moved_run = nlohmann::json::parse(moved).at("run").get<int>();
  write_file(j1, s1 + moved + "\n");
  CommandResult r = run_cli(merge);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, j1 + ":5: damaged journal line: run " + std::to_string(moved_run) +
                                  " is not of shard 1/2"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "--shard 1/2 -o " + dir_ + "/s1 --resume")) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/m/results.csv"));
  EXPECT_FALSE(fs::exists(dir_ + "/m/results.json"));
  // The command it names repairs it.
  r = run_cli("run " + yaml_ + " --shard 1/2 -o " + dir_ + "/s1 --resume -q");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.err, j1 + ":5:")) << r.err;
  r = run_cli(merge);
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_same_results(full_, dir_ + "/m");
  fs::remove_all(dir_ + "/m");
  // Header numbers out of range (checksums recomputed, so that the range check is what fails):
  // never a crash, one message naming the line.
  for (const nlohmann::json& shard :
       {nlohmann::json{1, 0}, nlohmann::json{1, -1}, nlohmann::json{3, 2}, nlohmann::json{-1, 2},
        nlohmann::json{0, 2}}) {
    std::vector<std::string> l = lines_of(s2);
    nlohmann::json h = without_check(l[0]);
    h["shard"] = shard;
    l[0] = with_check(h, "");
    write_file(j2, joined_lines(l));
    r = run_cli(merge);
    EXPECT_EQ(r.rc, 1) << shard.dump() << ": " << r.err;
    EXPECT_TRUE(contains(
        r.err, j2 + ":1: damaged journal header: \"shard\": " + shard.dump() + " is not [I, K]"))
        << r.err;
    EXPECT_FALSE(fs::exists(dir_ + "/m/results.csv"));
  }
  // Another seed in one shard's header, checksum recomputed: not the same experiment.
  std::vector<std::string> l = lines_of(s2);
  nlohmann::json h = without_check(l[0]);
  h["seed"] = "8";
  l[0] = with_check(h, "");
  write_file(j2, joined_lines(l));
  r = run_cli(merge);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "seed 8")) << r.err;
  EXPECT_TRUE(contains(r.err, "is not of the same experiment")) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/m/results.csv"));
}

TEST_F(CliJournal, NonRegularHugeAndSparseJournalsAreRefused) {
  const std::string out = dir_ + "/odd";
  fs::create_directories(out);
  const std::string journal = out + "/journal.jsonl";
  const std::vector<std::string> commands = {
      "run " + yaml_ + " -o " + out + " --resume -q --no-plots",
      "merge " + out + " -o " + dir_ + "/m --no-plots"};
  // A FIFO: refused at once, not waited on (a hang here fails by the test's timeout).
  ASSERT_EQ(mkfifo(journal.c_str(), 0644), 0);
  for (const std::string& c : commands) {
    const CommandResult r = run_cli(c);
    EXPECT_EQ(r.rc, 1) << c;
    EXPECT_TRUE(contains(r.err, journal + ": is not a regular file")) << r.err;
  }
  fs::remove(journal);
  // A link to a device (the test's own /dev/zero, when root may make one).
  if (make_char_device(out + "/zero", 1, 5)) {
    fs::create_symlink(out + "/zero", journal);
    for (const std::string& c : commands) {
      const CommandResult r = run_cli(c);
      EXPECT_EQ(r.rc, 1) << c;
      EXPECT_TRUE(contains(r.err, journal + ": is not a regular file")) << r.err;
    }
    expect_char_device(out + "/zero", 1, 5, "resume and merge");
    fs::remove(journal);
  }
  // A 3 GiB sparse file behind a whole header: refused by its size, never read whole.
  write_file(journal, lines_of(journal_)[0] + "\n");
  ASSERT_EQ(truncate(journal.c_str(), 3LL << 30), 0);
  for (const std::string& c : commands) {
    const CommandResult r = run_cli(c);
    EXPECT_EQ(r.rc, 1) << c;
    EXPECT_TRUE(contains(r.err, journal + ": 3221225472 bytes, more than a journal of 6 runs"))
        << r.err;
  }
  // A line longer than any run line of 12 iterations can be.
  write_file(journal, lines_of(journal_)[0] + "\n" + std::string(200'000, 'x') + "\n");
  const CommandResult r = run_cli(commands[0]);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, journal + ":2: line longer than")) << r.err;
  EXPECT_FALSE(fs::exists(out + "/results.csv"));
}

TEST_F(CliJournal, FinishedFolderIsRefusedWithoutForce) {
  const std::string csv = slurp(full_ + "/results.csv"), json = slurp(full_ + "/results.json");
  CommandResult r = run_cli("run " + yaml_ + " -o " + full_ + " --seed 9 -q --no-plots");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(
      r.err, full_ + ": holds an earlier run's files (journal.jsonl, results.csv, results.json)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "--resume")) << r.err;
  EXPECT_TRUE(contains(r.err, "--force")) << r.err;
  EXPECT_EQ(slurp(full_ + "/journal.jsonl"), journal_);
  EXPECT_EQ(slurp(full_ + "/results.csv"), csv);
  EXPECT_EQ(slurp(full_ + "/results.json"), json);
  r = run_cli("run " + yaml_ + " -o " + full_ + " --force --resume -q --no-plots");
  EXPECT_EQ(r.rc, 2) << r.err;
  // --force with a run that fails (point 1 leaves g2 unreachable): the earlier results stay.
  const std::string failing = dir_ + "/failing.yaml";
  std::ofstream(failing)
      << "topology:\n  kind: custom\n"
         "  nodes: [{name: g0}, {name: g1}, {name: g2}, {name: sw, type: switch}]\n  links: []\n"
         "algorithms: [ring, rhd]\nsize: 1MiB\niterations: 2\nsweep:\n  topology.links:\n"
         "    - [{from: g0, to: sw, bandwidth: 1GB/s, latency: 1us}, {from: g1, to: sw, bandwidth: "
         "1GB/s, "
         "latency: 1us}, {from: g2, to: sw, bandwidth: 1GB/s, latency: 1us}]\n"
         "    - [{from: g0, to: sw, bandwidth: 1GB/s, latency: 1us}, {from: g1, to: sw, bandwidth: "
         "1GB/s, "
         "latency: 1us}]\n";
  r = run_cli("run " + failing + " -o " + full_ + " --force -j 1 -q --no-plots");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(
      r.err, "the earlier results.csv and results.json in " + full_ + " are left as they were"))
      << r.err;
  EXPECT_EQ(slurp(full_ + "/results.csv"), csv);
  EXPECT_EQ(slurp(full_ + "/results.json"), json);
  // --force replaces them with the new run's.
  r = run_cli("run " + yaml_ + " -o " + full_ + " --seed 9 --force -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(slurp(full_ + "/results.csv"), csv);
  ASSERT_EQ(run_cli("run " + yaml_ + " -o " + dir_ + "/seed9 --seed 9 -q --no-plots").rc, 0);
  expect_same_results(dir_ + "/seed9", full_);
  EXPECT_FALSE(fs::exists(full_ + "/.stragglesim.lock"));
}

TEST_F(CliJournal, FolderInUseIsRefusedNamingTheHolder) {
  const std::string out = dir_ + "/busy";
  fs::create_directories(out);
  const std::string lock = out + "/.stragglesim.lock";
  const int fd = open(lock.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  const std::string holder = "pid 4242: stragglesim run other.yaml -o busy\n";
  ASSERT_EQ(write(fd, holder.data(), holder.size()), static_cast<ssize_t>(holder.size()));
  for (const std::string& c : {"run " + yaml_ + " -o " + out + " -q --no-plots",
                               "run " + yaml_ + " -o " + out + " -q --no-plots --resume"}) {
    const CommandResult r = run_cli(c);
    EXPECT_EQ(r.rc, 1) << c;
    EXPECT_TRUE(contains(
        r.err, out + ": the folder is in use by another stragglesim (pid 4242: stragglesim run "
                     "other.yaml -o busy)"))
        << r.err;
    EXPECT_FALSE(fs::exists(out + "/journal.jsonl"));
  }
  close(fd);  // released: the lock file left behind by a dead holder does not block
  const CommandResult r = run_cli("run " + yaml_ + " -o " + out + " -q --no-plots");
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_same_results(full_, out);
  EXPECT_FALSE(fs::exists(lock));
}

TEST(CliSignals, InterruptStopsCleanlyAndResumeFinishes) {
  const std::string dir = temp_dir("signals");
  const std::string yaml = experiment_file(dir, 3000);
  ASSERT_EQ(run_cli("run " + yaml + " -o " + dir + "/full -j 2 -q --no-plots").rc, 0);
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string out = dir + "/sig" + std::to_string(sig);
    const pid_t child =
        start_cli({"run", yaml, "-o", out, "-j", "1", "--no-plots", "--seed", "7"}, dir + "/err");
    ASSERT_FALSE(wait_for_lines(out + "/journal.jsonl", 3, child).has_value())
        << slurp(dir + "/err");
    kill(child, sig);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    const std::string err = slurp(dir + "/err");
    ASSERT_TRUE(WIFEXITED(status)) << err;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << err;
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    EXPECT_TRUE(contains(err, "stragglesim: interrupted: " + name + ": stopped with ")) << err;
    EXPECT_TRUE(contains(err, "finish it with: stragglesim run '" + yaml + "' -o '" + out +
                                  "' --seed 7 --jobs 1 --resume"))
        << err;
    // No results, no temporaries, no lock; the journal's runs are all whole.
    for (const auto& entry : fs::directory_iterator(out))
      EXPECT_EQ(entry.path().filename(), "journal.jsonl") << "left behind: " << entry.path();
    const std::string journal = slurp(out + "/journal.jsonl");
    ASSERT_FALSE(journal.empty());
    EXPECT_EQ(journal.back(), '\n');
    const CommandResult r =
        run_cli("run " + yaml + " -o " + out + " -j 2 --seed 7 --resume -q --no-plots");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_FALSE(contains(r.err, "damaged")) << r.err;
    expect_same_results(dir + "/full", out);
  }
  fs::remove_all(dir);
}

// A trace being written when SIGINT comes: exit 130, and neither the trace nor its temporary is
// left (the issue: a 400 MB invalid JSON under the final name).
TEST(CliSignals, InterruptedTraceIsRemoved) {
  const std::string dir = temp_dir("trace");
  const std::string cfg = dir + "/big.yaml";
  // 512 ranks: a trace of about 300 MB, several seconds; it is stopped after its first bytes.
  std::ofstream(cfg) << "topology: {kind: switch, ranks: 512, bandwidth: 450GiB/s, latency: 3us}\n"
                        "collective: {algorithm: ring, size: 64MiB}\n"
                        "iterations: 1\n";
  const std::string out = dir + "/out";
  fs::create_directories(out);
  const pid_t child = start_cli(
      {"simulate", cfg, "--trace", out + "/t.json", "--trace-max-size", "1GiB"}, dir + "/err");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool writing = false;
  while (!writing && std::chrono::steady_clock::now() < deadline) {
    for (const auto& entry : fs::directory_iterator(out)) {
      std::error_code ec;
      if (entry.path().filename().string().rfind(".t.json.", 0) == 0 &&
          fs::file_size(entry.path(), ec) > 0)
        writing = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(child, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const std::string err = slurp(dir + "/err");
  ASSERT_TRUE(writing) << err;
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 130) << "the trace was done before the signal? " << err;
  EXPECT_TRUE(contains(err, "stragglesim: interrupted: SIGINT: stopped while writing the trace"))
      << err;
  EXPECT_TRUE(fs::is_empty(out)) << "left behind: " << fs::directory_iterator(out)->path();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ssim::testing
