// Issue 15: every broken input a hostile user tried, fed through the CLI exactly as reported.
// Each must end in one "stragglesim: error: " message with the exit code of its class
// (1 input, 2 usage, 3 resource; docs/cli.md "Errors, exit codes and resource limits"), quickly,
// never a crash, "unexpected error" or a silent wrong result.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// A scratch folder per test, removed at the end.
class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ssim_err_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

// One message, with the single prefix, and the exit code.
void expect_error(const CommandResult& r, int rc, const std::string& what, const std::string& cmd) {
  EXPECT_EQ(r.rc, rc) << cmd << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("stragglesim: error: ", 0), 0u) << cmd << "\n" << r.err;
  EXPECT_EQ(count(r.err, "stragglesim: error: "), 1u) << cmd << "\n" << r.err;
  EXPECT_TRUE(contains(r.err, what)) << cmd << "\nexpected \"" << what << "\" in:\n" << r.err;
  EXPECT_FALSE(contains(r.err, "unexpected")) << cmd << "\n" << r.err;
}

void expect_error(const std::string& args, int rc, const std::string& what) {
  expect_error(run_cli(args), rc, what, args);
}

const std::string kSwitch =
    "topology: {kind: switch, ranks: 4, bandwidth: 450GiB/s, latency: 3us}\n";

TEST_F(CliErrors, VerifierStateThatWouldWrapIsRefusedNotACrash) {
  // ranks * chunks * words wrapped to 0 in the verifier and the first write crashed.
  const std::string f =
      file("huge.json", R"({"collective":"allreduce","algorithm":"x","ranks":16777216,)"
                        R"("chunks":4194304,"straggler":null,"options":{},"rounds":[]})");
  expect_error("verify " + f, 3, "verifying a schedule of 16777216 ranks x 4194304 chunks");
  // Above any budget the algorithms layer refuses by itself (verifier_test).
}

TEST_F(CliErrors, DirectoriesDevicesAndLongNamesAreRefusedByName) {
  for (const char* cmd : {"verify", "calibrate", "simulate", "run"}) {
    expect_error(std::string(cmd) + " " + dir(), 1, dir() + ": is a directory, not a file");
    expect_error(std::string(cmd) + " /dev/zero", 1, "/dev/zero: not a regular file");
  }
  const std::string longname(300, 'a');
  expect_error("advise --topology " + longname + " --size 1GiB --ranks 8", 1,
               "not a file, a shipped topology");
  const std::string y = file("long.yaml", "topology: {file: " + longname + "}\n");
  expect_error("simulate " + y, 1, "long.yaml:1:18: topology.file: topology file");
  const std::string d = file("dir.yaml", "topology: {file: " + dir() + "}\n");
  expect_error("simulate " + d, 1, "is a directory, not a file");
}

TEST_F(CliErrors, AFileOverTheSizeLimitIsRefusedBeforeReading) {
  const std::string path = file("sparse.yaml", "");
  std::filesystem::resize_file(path,
                               (std::uintmax_t{256} << 20) + 1);  // sparse: nothing is written
  expect_error("simulate " + path, 1, "bytes, over the 256 MiB limit on an input file");
}

TEST_F(CliErrors, VerifyStreamsAFileOfAnySize) {
  // verify reads round by round, so the limit does not apply: a file that size is read, and its
  // first byte is the error.
  const std::string path = file("sparse.json", "x");
  std::filesystem::resize_file(path, (std::uintmax_t{256} << 20) + 1);
  expect_error("verify " + path, 1, "sparse.json: line 1, column 1: malformed JSON: syntax error");
}

TEST_F(CliErrors, BadJsonNumbersAndDuplicateKeys) {
  expect_error("verify " + file("n.json", "[1e400]"), 1,
               "malformed JSON: number overflow parsing '1e400'");
  const std::string dup =
      file("dup.json",
           R"({"collective":"allreduce","algorithm":"x","ranks":4,"chunks":4,"straggler":null,)"
           R"("options":{},"rounds":[{"transfers":[{"src":0,"dst":1,"src":2,"chunks":[0,1],)"
           R"("op":"reduce"}]}]})");
  expect_error("verify " + dup, 1, "rounds[0].transfers[0].src: duplicate key");
}

TEST_F(CliErrors, YamlKeysMustBePlainAndUnique) {
  expect_error("simulate " + file("q.yaml", "? :\n"), 1,
               "q.yaml:1:3: (top level): a key must be a plain name");
  expect_error("run " + file("q.yaml", "? :\n") + " --dry-run", 1, "a key must be a plain name");
  const std::string d =
      file("d.yaml",
           kSwitch + "collective: {algorithm: ring, size: 1GiB}\niterations: 2\niterations: 3\n");
  expect_error("simulate " + d, 1,
               "d.yaml:4:1: iterations: duplicate key 'iterations' (first at line 3)");
  const std::string nested =
      file("n.yaml", kSwitch + "collective: {algorithm: ring, size: 1GiB, size: 2GiB}\n");
  expect_error("simulate " + nested, 1, "collective.size: duplicate key 'size'");
}

TEST_F(CliErrors, SweptRankCountMustBeANumber) {
  const std::string y =
      file("s.yaml", kSwitch + "algorithms: [ring]\nsize: 1MiB\nsweep: {ranks: [{}]}\n");
  expect_error("run " + y + " --dry-run", 1, "sweep.ranks[0]: expected an integer");
}

TEST_F(CliErrors, SizeWithoutAUnitAndNameAsAList) {
  const std::string u =
      file("u.yaml", kSwitch + "collective: {algorithm: ring, size: 1073741824}\n");
  expect_error("simulate " + u, 1,
               "collective.size: invalid size '1073741824': a unit is required");
  const std::string n =
      file("n.yaml", "name: [a, b]\n" + kSwitch + "collective: {algorithm: ring, size: 1GiB}\n");
  expect_error("simulate " + n, 1, "n.yaml:1:7: name: expected a string");
  const std::string e =
      file("e.yaml", "name: [a, b]\n" + kSwitch + "algorithms: [ring]\nsize: 1MiB\n");
  expect_error("run " + e + " --dry-run", 1, "e.yaml:1:7: name: expected a string");
  expect_error("advise --topology dgx_h100 --size 1073741824", 1,
               "--size: invalid size '1073741824': a unit is required");
}

TEST_F(CliErrors, TinyBandwidthIsAnErrorOrFiniteOutput) {
  const std::string inf =
      file("inf.yaml",
           "topology: {kind: switch, ranks: 4, bandwidth: 1e-300B/s, latency: 3us}\n"
           "collective: {algorithm: ring, size: 1GiB}\niterations: 2\n");
  expect_error("simulate " + inf, 1, "the simulated time overflows");
  expect_error("simulate " + inf + " --json", 1, "the simulated time overflows");
  // 1e-290 B/s: times near 1e299 s are finite; they print in exponent form, in full rows.
  const std::string big =
      file("big.yaml",
           "topology: {kind: switch, ranks: 4, bandwidth: 1e-290B/s, latency: 3us}\n"
           "collective: {algorithm: ring, size: 1GiB}\niterations: 2\n");
  const CommandResult t = run_cli("simulate " + big);
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_TRUE(contains(t.out, "\nmean   1.611e+299s 1.611e+299s         0.00        0.00  "))
      << t.out;
  EXPECT_FALSE(contains(t.out, "inf")) << t.out;
  const CommandResult j = run_cli("simulate " + big + " --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc["mean_completion_s"].is_number()) << j.out;
  EXPECT_GT(doc["mean_completion_s"].get<double>(), 1e298);
}

TEST_F(CliErrors, LocationIsPrintedOnce) {
  const std::string y = file("f.yaml", kSwitch +
                                           "collective: {algorithm: ring, size: 1GiB}\n"
                                           "delays:\n  persistent: [{rank: 3, delay: -10ms}]\n");
  const CommandResult r = run_cli("simulate " + y);
  expect_error(r, 1, "f.yaml:4:33: delays.persistent[0].delay: invalid time '-10ms'",
               "simulate f.yaml");
  EXPECT_EQ(count(r.err, "f.yaml:"), 1u) << r.err;
}

TEST_F(CliErrors, UsageErrorsSayWhatIsWrong) {
  expect_error("--bogus", 2, "unknown option '--bogus'");
  expect_error("frobnicate", 2, "unknown subcommand 'frobnicate' (one of: schedule, verify");
  expect_error("", 2, "a subcommand is required");
  const CommandResult seed = run_cli("simulate x.yaml --seed -5");
  expect_error(seed, 2, "--seed: must be a whole number from 0 to 9223372036854775807, got '-5'",
               "--seed -5");
  EXPECT_LT(seed.err.size(), 200u) << seed.err;  // no 309-digit bound
  expect_error("schedule ring --ranks 8 --max-memory 12", 2,
               "--max-memory: invalid size '12': a unit is required");
  const CommandResult help = run_cli("--help");
  EXPECT_EQ(help.rc, 0);
}

TEST_F(CliErrors, OverTheMemoryBudgetIsRefusedWithWhatItNeeds) {
  // Each of these ran for 20 s or more and ended in std::bad_alloc (or never ended).
  expect_error("schedule ring --ranks 65536", 3,
               "the ring schedule for 65536 ranks (8.6e+09 transfers");
  expect_error("schedule ring --ranks 1048576", 3, "would need about");
  expect_error("schedule stragglar --ranks 1048576", 3, "the stragglar schedule for 1048576 ranks");
  expect_error("schedule tree --ranks 65536 --option segments=65536", 3,
               "use fewer ranks or segments");
  expect_error(
      "advise --topology switch:450GiB/s:3us --ranks 65536 --size 1GiB --algorithms stragglar", 3,
      "(the largest: stragglar on 65536 ranks");
  // The budget is the user's: a small one refuses a small schedule, naming it.
  expect_error("schedule ring --ranks 8 --max-memory 1KiB", 3,
               "more than the budget of 1KiB (--max-memory 1KiB)");
  const std::string y =
      file("s.yaml", kSwitch + "collective: {algorithm: ring, size: 1GiB}\niterations: 1000\n");
  expect_error("simulate " + y + " --max-memory 4KiB", 3,
               "simulating ring on 4 ranks (24 transfers, 1000 iterations)");
  EXPECT_EQ(run_cli("simulate " + y + " --max-memory 1GiB").rc, 0);
}

TEST_F(CliErrors, CalibrateRefusesWhatItCannotFit) {
  const std::string sweep = file("s.csv", "bytes,seconds\n1024,1e-5\n2048,2e-5\n4096,4e-5\n");
  // Without a link_class column every row used to be fitted and labelled 'nosuch'.
  expect_error("calibrate " + sweep + " --link-class nosuch", 1,
               "s.csv: --link-class nosuch: the sweep has no link_class column");
  expect_error("calibrate " + data_path("calibration/ring4_measured.csv") + " --link-class nvlink",
               1, "holds collective runs, which have no link classes");
  // Denormal times made the fit singular, reported as "2 distinct sizes ... needs 2 distinct
  // sizes".
  expect_error(
      "calibrate " + file("d.csv", "bytes,seconds\n1024,1e-310\n2048,2e-310\n"), 1,
      "d.csv:2: column seconds: bad value '1e-310' (expected a time in seconds >= 1e-12 (1 ps))");
  // A flat sweep (R^2 = 0) fitted 1.1e17 GB/s: a warning, and -o refuses to write it.
  const std::string flat = file("f.csv", "bytes,seconds\n1024,1e-5\n1048576,1e-5\n4096,1e-5\n");
  const CommandResult shown = run_cli("calibrate " + flat);
  EXPECT_EQ(shown.rc, 0) << shown.err;
  EXPECT_TRUE(contains(shown.out, "warning: the bandwidth is not determined")) << shown.out;
  expect_error("calibrate " + flat + " -o " + dir() + "/t.yaml --ranks 8 --machine m", 1,
               "the fit written by -o does not determine a bandwidth");
  EXPECT_FALSE(std::filesystem::exists(dir() + "/t.yaml"));
  // With --piecewise given, the advice is to move its boundaries, not to use it.
  const std::string bent = file("b.csv",
                                "bytes,seconds\n1024,1e-5\n2048,2e-5\n4096,4e-5\n8192,1e-5\n"
                                "16384,2e-6\n32768,1e-6\n");
  const CommandResult piece = run_cli("calibrate " + bent + " --piecewise 4096");
  EXPECT_TRUE(contains(piece.out, "move the --piecewise boundaries")) << piece.out;
  EXPECT_FALSE(contains(piece.out, "try --piecewise")) << piece.out;
  expect_error("calibrate " + bent + " --piecewise 4096 --piece 2 -o " + dir() +
                   "/t.yaml --ranks 8 --machine m",
               1, "move the --piecewise boundaries or choose another --piece");
}

}  // namespace
}  // namespace ssim::testing

namespace ssim::testing {
namespace {

// Issue 15, item 7: on a ring topology the alpha-beta model gives rhd's crossing transfers the
// full link bandwidth each; the result says so (one warning, a JSON/CSV flag) and names the flow
// model.
TEST_F(CliErrors, AlphabetaSaysWhenItIgnoresSharedLinks) {
  const std::string ring = "topology: {kind: ring, ranks: 8, bandwidth: 100GB/s, latency: 1us}\n";
  const std::string y =
      file("r.yaml", ring + "collective: {algorithm: rhd, size: 64MiB}\niterations: 2\n");
  const CommandResult t = run_cli("simulate " + y);
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_EQ(count(t.err, "stragglesim: warning: "), 1u) << t.err;
  EXPECT_TRUE(contains(t.err, "round 0: link gpu1 -> gpu0 carries 4 transfers")) << t.err;
  EXPECT_TRUE(contains(t.err, "network: {model: flow}")) << t.err;
  const auto j = nlohmann::json::parse(run_cli("simulate " + y + " --json").out);
  EXPECT_TRUE(j["alphabeta_shared_link"].get<bool>());
  EXPECT_EQ(j["shared_link"]["round"], 0);
  // Ring on a ring shares nothing; the flow model shares links itself.
  const std::string clean =
      file("c.yaml", ring + "collective: {algorithm: ring, size: 64MiB}\niterations: 2\n");
  const CommandResult c = run_cli("simulate " + clean + " --json");
  EXPECT_TRUE(c.err.empty()) << c.err;
  EXPECT_FALSE(nlohmann::json::parse(c.out)["alphabeta_shared_link"].get<bool>());
  const std::string flow =
      file("f.yaml", ring + "network: {model: flow}\ncollective: {algorithm: rhd, size: 64MiB}\n");
  EXPECT_TRUE(run_cli("simulate " + flow).err.empty());
  // run: one warning for the experiment, and the CSV column.
  const std::string e =
      file("e.yaml", ring + "algorithms: [ring, rhd]\nsize: 1MiB\niterations: 2\n");
  const CommandResult r = run_cli("run " + e + " -o " + dir() + "/out --no-plots -q");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count(r.err, "stragglesim: warning: 1 of 2 runs share links"), 1u) << r.err;
  const std::string csv = slurp(dir() + "/out/results.csv");
  EXPECT_TRUE(contains(csv.substr(0, csv.find('\n')), ",alphabeta_shared_link"))
      << csv.substr(0, 400);
  EXPECT_TRUE(contains(csv, ",ring,") && contains(csv, ",0,ring\n") && contains(csv, ",1,rhd\n"));
}

}  // namespace
}  // namespace ssim::testing
