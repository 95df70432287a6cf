// Output files through the CLI (common/output_file.hpp): a device node or FIFO given for output
// is written in place and is still the same node afterwards (also after a failed run), a
// directory is refused, a symlink is followed, a regular file is replaced whole; a write error
// (a full device, a full disk, a full or closed standard output) is exit 3 with a message naming
// the file, nothing printed as "wrote", and no partial file left under the name.
//
// Device nodes are made by the test (mknod, as root; skipped otherwise) in its own folder, with
// the numbers of /dev/null (1,3) and /dev/full (1,7): /dev/null and /dev/full themselves are
// never used. The full disk is tests/experiments/enospc_preload.cpp, loaded with LD_PRELOAD.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/experiments/cli_support.hpp"

namespace {

using ssim::testing::CommandResult;
using ssim::testing::data_path;
using ssim::testing::expect_char_device;
using ssim::testing::make_char_device;
using ssim::testing::run_cli;
using ssim::testing::slurp;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The binary with its standard output sent to `stdout_target` (a shell redirection target or
// "&-" to close it); stderr captured.
CommandResult run_with_stdout(const std::string& args, const std::string& stdout_target,
                              const std::string& dir) {
  const std::string err_path = dir + "/.stderr";
  const std::string cmd = std::string(STRAGGLESIM_BIN) + " " + args + " </dev/null >" +
                          stdout_target + " 2>" + err_path;
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err_path);
  std::remove(err_path.c_str());
  return r;
}

class CliOutputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ssim_outfiles_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }
  std::string config() const {
    return file("sim.yaml",
                "topology: {kind: switch, ranks: 4, bandwidth: 450GiB/s, latency: 3us}\n"
                "collective: {algorithm: ring, size: 1MiB}\niterations: 3\n");
  }
  std::string experiment() const {
    return file("exp.yaml",
                "topology: {kind: switch, ranks: 4, bandwidth: 450GiB/s, latency: 3us}\n"
                "algorithms: [ring, rhd]\nbaseline: ring\nsize: 1MiB\niterations: 3\n"
                "sweep: {ranks: [4, 8]}\n");
  }

  // A character device with the given numbers in the test's folder; false when this process
  // may not make one (not root) or may not write to it (a nodev mount).
  bool make_device(const std::string& name, unsigned major_number, unsigned minor_number) const {
    return make_char_device(path(name), major_number, minor_number);
  }
  void expect_device(const std::string& name, unsigned major_number, unsigned minor_number,
                     const std::string& after) const {
    expect_char_device(path(name), major_number, minor_number, after);
  }
  // No temporary left beside the outputs.
  void expect_no_temporaries(const std::string& folder) const {
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp"))
          << "left behind: " << entry.path();
    }
  }

  std::string dir_;
};

TEST_F(CliOutputFiles, DeviceNodeIsWrittenInPlaceAndStaysADevice) {
  if (!make_device("null", 1, 3)) GTEST_SKIP() << "cannot make device nodes here (needs root)";
  const std::string null = path("null");
  for (const std::string& args :
       {"schedule ring --ranks 4 -o " + null, "schedule rhd --ranks 8 --format json -o " + null,
        "lower ring --ranks 4 --bytes 64KiB -o " + null,
        "calibrate " + data_path("calibration/p2p_sweep.csv") + " --ranks 4 --machine test -o " +
            null,
        "simulate " + config() + " --trace " + null,
        "advise --topology switch:450GiB/s:3us --ranks 4 --size 1MiB -n 3 --trace " + null}) {
    const CommandResult r = run_cli(args);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.err;
    expect_device("null", 1, 3, args);
  }
  // A failing traced run removes only what it created: never the node it was given.
  const std::string failing = "simulate " + config() + " --trace " + null + " --trace-links 2";
  const CommandResult r = run_cli(failing);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "link utilization counters need the flow model")) << r.err;
  expect_device("null", 1, 3, failing);
  expect_no_temporaries(dir_);
}

TEST_F(CliOutputFiles, FullDeviceIsExit3NamingTheFile) {
  if (!make_device("full", 1, 7)) GTEST_SKIP() << "cannot make device nodes here (needs root)";
  const std::string full = path("full");
  for (const std::string& args :
       {"schedule ring --ranks 4 -o " + full, "lower ring --ranks 4 --bytes 64KiB -o " + full,
        "calibrate " + data_path("calibration/p2p_sweep.csv") + " --ranks 4 --machine test -o " +
            full,
        "simulate " + config() + " --trace " + full}) {
    const CommandResult r = run_cli(args);
    EXPECT_EQ(r.rc, 3) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "stragglesim: error: " + full + ": write failed: No space left"))
        << args << "\n"
        << r.err;
    EXPECT_FALSE(contains(r.out, "wrote")) << args << "\n" << r.out;
    expect_device("full", 1, 7, args);
  }
}

TEST_F(CliOutputFiles, FullStandardOutputIsExit3) {
  if (!make_device("full", 1, 7)) GTEST_SKIP() << "cannot make device nodes here (needs root)";
  const std::string full = path("full");
  for (const std::string& args :
       {std::string("algorithms"), std::string("rounds --ranks 8 --stragglers 1"),
        std::string("schedule ring --ranks 4"), std::string("lower ring --ranks 4 --bytes 64KiB"),
        "simulate " + config() + " --json", "simulate " + config(),
        "calibrate " + data_path("calibration/p2p_sweep.csv"),
        std::string("advise --topology switch:450GiB/s:3us --ranks 4 --size 1MiB -n 3"),
        "run " + experiment() + " -o " + path("out") + " -q --no-plots"}) {
    const CommandResult r = run_with_stdout(args, full, dir_);
    EXPECT_EQ(r.rc, 3) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "stragglesim: error: standard output: write failed: No space left"))
        << args << "\n"
        << r.err;
    expect_device("full", 1, 7, args);
  }
}

TEST_F(CliOutputFiles, ClosedStandardOutputIsExit3) {
  for (const std::string args : {"algorithms", "schedule ring --ranks 4"}) {
    const CommandResult r = run_with_stdout(args, "&-", dir_);
    EXPECT_EQ(r.rc, 3) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "stragglesim: error: standard output: write failed")) << r.err;
  }
  // A file opened while standard output is closed does not become standard output.
  const CommandResult r =
      run_with_stdout("schedule ring --ranks 4 -o " + path("ring.txt"), "&-", dir_);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(path("ring.txt")), run_cli("schedule ring --ranks 4").out);
}

TEST_F(CliOutputFiles, FifoIsWrittenInPlace) {
  const std::string fifo = path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // The reader blocks in open() until the writer opens the FIFO.
  FILE* reader = popen(("timeout 20 cat " + fifo).c_str(), "r");  // ends if no writer comes
  ASSERT_NE(reader, nullptr);
  const CommandResult r = run_cli("schedule ring --ranks 4 -o " + fifo);
  std::string received;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, reader)) > 0;) received.append(buf, n);
  pclose(reader);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(received, run_cli("schedule ring --ranks 4").out);
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
}

// /dev/stdout names descriptor 1, whatever it is: a pipe (no path at all) or a regular file
// (appended to, never replaced). The test's own link to /proc/self/fd/1 stands for /dev/stdout,
// so that a broken writer replaces that link, never the machine's /dev/stdout.
TEST_F(CliOutputFiles, StdoutLinkIsWrittenInPlace) {
  const std::string link = path("stdout");
  std::filesystem::create_symlink("/proc/self/fd/1", link);
  const std::string expected = run_cli("schedule ring --ranks 4").out;
  FILE* pipe =
      popen((std::string(STRAGGLESIM_BIN) + " schedule ring --ranks 4 -o " + link).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string received;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) received.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(received, expected);
  const CommandResult file = run_cli("schedule ring --ranks 4 -o " + link);
  EXPECT_EQ(file.rc, 0) << file.err;
  EXPECT_EQ(file.out, expected);
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced";
}

TEST_F(CliOutputFiles, DirectoryIsRefused) {
  std::filesystem::create_directory(path("folder"));
  for (const std::string& args : {"schedule ring --ranks 4 -o " + path("folder"),
                                  "lower ring --ranks 4 --bytes 1KiB -o " + path("folder"),
                                  "simulate " + config() + " --trace " + path("folder")}) {
    const CommandResult r = run_cli(args);
    EXPECT_EQ(r.rc, 1) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, path("folder") + ": is a directory")) << r.err;
    EXPECT_TRUE(std::filesystem::is_directory(path("folder")));
    EXPECT_TRUE(std::filesystem::is_empty(path("folder")));
  }
}

TEST_F(CliOutputFiles, SymlinkIsFollowedAndRegularFileReplacedWhole) {
  const std::string target = file("target.txt",
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n"
                                  "old content that is longer than the new one\n");
  ASSERT_EQ(chmod(target.c_str(), 0640), 0);
  std::filesystem::create_symlink("target.txt", path("link"));
  const CommandResult r = run_cli("schedule ring --ranks 3 -o " + path("link"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(path("link"))) << "the link was replaced";
  EXPECT_EQ(slurp(target), run_cli("schedule ring --ranks 3").out);
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "the replaced file keeps its mode";
  // A dangling link: the file it names is created.
  std::filesystem::create_symlink("new.txt", path("dangling"));
  ASSERT_EQ(run_cli("schedule ring --ranks 3 -o " + path("dangling")).rc, 0);
  EXPECT_EQ(slurp(path("new.txt")), slurp(target));
  EXPECT_TRUE(std::filesystem::is_symlink(path("dangling")));
  expect_no_temporaries(dir_);
}

// The full disk: enospc_preload.cpp fails write() on files under disk/ after a byte budget.
class CliFullDisk : public CliOutputFiles {
 protected:
  void SetUp() override {
    CliOutputFiles::SetUp();
    std::filesystem::create_directory(path("disk"));
  }
  CommandResult run_full(const std::string& args, long long budget) const {
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string saved_asan = asan ? asan : "";
    setenv("LD_PRELOAD", SSIM_ENOSPC_PRELOAD, 1);
    setenv("SSIM_ENOSPC_AFTER", std::to_string(budget).c_str(), 1);
    setenv("SSIM_ENOSPC_MATCH", (dir_ + "/disk/").c_str(), 1);
    // An ASan build would refuse a preloaded library ahead of its runtime.
    setenv("ASAN_OPTIONS",
           (saved_asan + (saved_asan.empty() ? "" : ":") + "verify_asan_link_order=0").c_str(), 1);
    const CommandResult r = run_cli(args);
    unsetenv("LD_PRELOAD");
    unsetenv("SSIM_ENOSPC_AFTER");
    unsetenv("SSIM_ENOSPC_MATCH");
    if (asan) {
      setenv("ASAN_OPTIONS", saved_asan.c_str(), 1);
    } else {
      unsetenv("ASAN_OPTIONS");
    }
    return r;
  }
  void expect_write_error(const CommandResult& r, const std::string& file,
                          const std::string& what) const {
    EXPECT_EQ(r.rc, 3) << what << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, file + ": write failed: No space left on device")) << what << "\n"
                                                                                   << r.err;
    EXPECT_FALSE(contains(r.out, "wrote")) << what << "\n" << r.out;
  }
};

TEST_F(CliFullDisk, SingleFileOutputsAreCompleteOrAbsent) {
  const std::string topo = path("disk/topo.yaml");
  const std::string plan = path("disk/plan.txt");
  const std::string simulated = path("disk/simulated.csv");
  const std::string schedule = path("disk/ring.json");
  const std::string topo4 =
      file("topo4.yaml", "kind: switch\nranks: 4\nbandwidth: 450GiB/s\nlatency: 3us\n");
  const std::string validate = "validate " + data_path("calibration/ring4_measured.csv") +
                               " --topology " + topo4 + " -o " + simulated;
  const std::string lower = "lower ring --ranks 64 --bytes 1MiB -o " + plan;
  for (const long long budget : {0LL, 100LL}) {
    const std::string tag = " (room for " + std::to_string(budget) + " B)";
    const CommandResult cal = run_full("calibrate " + data_path("calibration/p2p_sweep.csv") +
                                           " --ranks 4 --machine test -o " + topo,
                                       budget);
    expect_write_error(cal, topo, "calibrate" + tag);
    EXPECT_FALSE(std::filesystem::exists(topo)) << tag;
    expect_write_error(run_full(lower, budget), plan, "lower" + tag);
    EXPECT_FALSE(std::filesystem::exists(plan)) << tag;
    expect_write_error(run_full(validate, budget), simulated, "validate" + tag);
    EXPECT_FALSE(std::filesystem::exists(simulated)) << tag;
    expect_write_error(
        run_full("schedule ring --ranks 64 --format json -o " + schedule, 5000 + budget), schedule,
        "schedule" + tag);
    EXPECT_FALSE(std::filesystem::exists(schedule)) << tag;
    expect_no_temporaries(path("disk"));
  }
  // With room, the same commands write their files.
  EXPECT_EQ(run_full(lower, 1 << 30).rc, 0);
  EXPECT_EQ(slurp(plan), run_cli("lower ring --ranks 64 --bytes 1MiB").out);
}

TEST_F(CliFullDisk, RunNeverSaysWroteWhatItCouldNotWrite) {
  const std::string exp = experiment();
  const std::string whole = path("disk/whole");
  const CommandResult ok = run_full("run " + exp + " -o " + whole + " -q --no-plots --jobs 1", -1);
  ASSERT_EQ(ok.rc, 0) << ok.err;
  const auto size = [](const std::string& f) {
    return static_cast<long long>(std::filesystem::file_size(f));
  };
  const long long journal = size(whole + "/journal.jsonl");
  const long long csv = size(whole + "/results.csv");
  const std::string csv_text = slurp(whole + "/results.csv");

  // Room for the journal and results.csv only: results.json fails.
  const std::string out = path("disk/out");
  const CommandResult r =
      run_full("run " + exp + " -o " + out + " -q --no-plots --jobs 1", journal + csv + 10);
  expect_write_error(r, out + "/results.json", "run, room for results.csv");
  EXPECT_FALSE(std::filesystem::exists(out + "/results.json")) << "an empty or cut results.json";
  EXPECT_EQ(slurp(out + "/results.csv"), csv_text);
  expect_no_temporaries(out);

  // The journal's header and results.csv's header are written first, in that order; then the
  // runs' journal lines and each point's rows as they finish.
  const auto first_line = [](const std::string& text) {
    return static_cast<long long>(text.find('\n') + 1);
  };
  const long long journal_header = first_line(slurp(whole + "/journal.jsonl"));
  const long long csv_header = first_line(csv_text);

  // Room for half of results.csv's header: neither results file, and --resume finishes the run.
  const std::string cut = path("disk/cut");
  const CommandResult c = run_full("run " + exp + " -o " + cut + " -q --no-plots --jobs 1",
                                   journal_header + csv_header / 2);
  expect_write_error(c, cut + "/results.csv", "run, room for half of results.csv's header");
  EXPECT_FALSE(std::filesystem::exists(cut + "/results.csv"));
  EXPECT_FALSE(std::filesystem::exists(cut + "/results.json"));
  expect_no_temporaries(cut);
  const CommandResult resumed =
      run_cli("run " + exp + " -o " + cut + " -q --no-plots --jobs 1 --resume");
  ASSERT_EQ(resumed.rc, 0) << resumed.err;
  EXPECT_EQ(slurp(cut + "/results.csv"), csv_text);
  EXPECT_EQ(nlohmann::json::parse(slurp(cut + "/results.json"))["status"]["state"], "complete");

  // No room for the first run's journal line: exit 3 naming the journal, no results files.
  const std::string none = path("disk/none");
  const CommandResult n = run_full("run " + exp + " -o " + none + " -q --no-plots --jobs 1",
                                   journal_header + csv_header + 10);
  EXPECT_EQ(n.rc, 3) << n.err;
  EXPECT_TRUE(contains(n.err, none + "/journal.jsonl: write failed: No space left on device"))
      << n.err;
  EXPECT_FALSE(contains(n.out, "wrote")) << n.out;
  EXPECT_FALSE(std::filesystem::exists(none + "/results.json"));
  expect_no_temporaries(none);

  // merge, with room for results.csv only: no "wrote", no results.json.
  for (const char* shard : {"1", "2"}) {
    const CommandResult sr = run_cli("run " + exp + " --shard " + shard + "/2 -o " +
                                     path(std::string("shard-") + shard) + " -q --no-plots");
    ASSERT_EQ(sr.rc, 0) << sr.err;
  }
  const std::string merged = path("disk/merged");
  const CommandResult m =
      run_full("merge " + path("shard-1") + " " + path("shard-2") + " -o " + merged + " --no-plots",
               csv + 10);
  expect_write_error(m, merged + "/results.json", "merge, room for results.csv");
  EXPECT_FALSE(std::filesystem::exists(merged + "/results.json"));
  EXPECT_EQ(slurp(merged + "/results.csv"), csv_text);
  expect_no_temporaries(merged);
}

}  // namespace
