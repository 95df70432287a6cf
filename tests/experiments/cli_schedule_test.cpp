#include <gtest/gtest.h>

#include "cli_support.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

TEST(CliSchedule, JsonPipesIntoVerify) {
  const CommandResult gen = run_cli("schedule ring --ranks 8 --format json");
  ASSERT_EQ(gen.rc, 0) << gen.err;
  const CommandResult ver = run_cli("verify -", gen.out);
  ASSERT_EQ(ver.rc, 0) << ver.err;
  EXPECT_TRUE(contains(ver.out, "ok: ring is a correct allreduce")) << ver.out;
  EXPECT_TRUE(contains(ver.out, "rounds: 14")) << ver.out;
}

TEST(CliSchedule, BinaryFormWritesAndVerifies) {
  const std::string path = "/tmp/ssim_cli_stragglar9.bin";
  const std::string json_path = "/tmp/ssim_cli_stragglar9.json";
  ASSERT_EQ(run_cli("schedule stragglar -r 9 --option stragglers=3 --format bin -o " + path).rc, 0);
  ASSERT_EQ(
      run_cli("schedule stragglar -r 9 --option stragglers=3 --format json -o " + json_path).rc, 0);
  const CommandResult bin = run_cli("verify " + path), json = run_cli("verify " + json_path);
  EXPECT_EQ(bin.rc, 0) << bin.err;
  EXPECT_EQ(bin.out, json.out);
  EXPECT_TRUE(contains(bin.out, "ok: stragglar is a correct allreduce")) << bin.out;
  // From a pipe too.
  const CommandResult gen = run_cli("schedule ring --ranks 8 --format bin");
  ASSERT_EQ(gen.rc, 0) << gen.err;
  const CommandResult piped = run_cli("verify -", gen.out);
  EXPECT_EQ(piped.rc, 0) << piped.err;
  EXPECT_TRUE(contains(piped.out, "rounds: 14")) << piped.out;
  // A truncated file: exit 1, the file and the byte named.
  const CommandResult cut = run_cli("verify -", gen.out.substr(0, gen.out.size() - 3));
  EXPECT_EQ(cut.rc, 1);
  EXPECT_TRUE(contains(cut.err, "<stdin>: byte ")) << cut.err;
  EXPECT_TRUE(contains(cut.err, "truncated: the file ends in the CRC-32")) << cut.err;
  std::remove(path.c_str());
  std::remove(json_path.c_str());
}

TEST(CliSchedule, FromAFileConvertsBetweenTheForms) {
  const std::string bin = "/tmp/ssim_cli_from_tree.bin", json = "/tmp/ssim_cli_from_tree.json";
  const std::string back = "/tmp/ssim_cli_from_tree_back.json";
  ASSERT_EQ(run_cli("schedule tree -r 6 --option segments=3 --format bin -o " + bin).rc, 0);
  ASSERT_EQ(run_cli("schedule tree -r 6 --option segments=3 --format json -o " + json).rc, 0);
  // bin -> JSON gives the generated JSON byte for byte; JSON -> bin the generated binary.
  ASSERT_EQ(run_cli("schedule --from " + bin + " --format json -o " + back).rc, 0);
  EXPECT_EQ(run_cli("verify " + back).out, run_cli("verify " + json).out);
  const CommandResult a = run_cli("schedule --from " + back + " --format json");
  const CommandResult b = run_cli("schedule tree -r 6 --option segments=3 --format json");
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(run_cli("schedule --from " + json + " --format bin").out,
            run_cli("schedule tree -r 6 --option segments=3 --format bin").out);
  EXPECT_EQ(run_cli("schedule --from " + bin).out,
            run_cli("schedule tree -r 6 --option segments=3").out);
  EXPECT_EQ(run_cli("schedule --from " + bin + " --format msccl-xml").out,
            run_cli("schedule tree -r 6 --option segments=3 --format msccl-xml").out);
  CommandResult r = run_cli("schedule tree --from " + bin);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "--from FILE takes the place of the algorithm")) << r.err;
  r = run_cli("schedule --format json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(contains(r.err, "give an algorithm, or --from FILE")) << r.err;
  r = run_cli("schedule --from " + data_path("schedules/double_count.json") + " --format bin -o " +
              back);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "double_count.json: round 1, transfer 0")) << r.err;
  std::remove(bin.c_str());
  std::remove(json.c_str());
  std::remove(back.c_str());
}

TEST(CliSchedule, TextFormatHasOneLinePerRound) {
  const CommandResult r = run_cli("schedule ring -r 4");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "R0 reduce-scatter: 0>1 c3+ | 1>2 c0+ | 2>3 c1+ | 3>0 c2+")) << r.out;
  EXPECT_TRUE(contains(r.out, "R5 allgather:")) << r.out;
  EXPECT_FALSE(contains(r.out, "R6")) << r.out;
}

TEST(CliSchedule, WritesToAFile) {
  const std::string path = "/tmp/ssim_cli_ring4.json";
  ASSERT_EQ(run_cli("schedule ring -r 4 --format json -o " + path).rc, 0);
  const CommandResult ver = run_cli("verify " + path);
  EXPECT_EQ(ver.rc, 0) << ver.err;
  std::remove(path.c_str());
}

TEST(CliSchedule, AlgorithmsListsEveryAlgorithm) {
  const CommandResult r = run_cli("algorithms");
  ASSERT_EQ(r.rc, 0);
  EXPECT_TRUE(contains(r.out, "ring  (n >= 2)")) << r.out;
}

TEST(CliSchedule, HelpOnEveryCommand) {
  for (const char* cmd : {"--help", "schedule --help", "verify --help", "algorithms --help"}) {
    const CommandResult r = run_cli(cmd);
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_TRUE(contains(r.out, "Usage")) << cmd << ": " << r.out;
  }
}

TEST(CliSchedule, UnknownAlgorithmListsValidNames) {
  const CommandResult r = run_cli("schedule rung --ranks 8");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "unknown algorithm 'rung' (did you mean 'ring'? valid: ring")) << r.err;
}

TEST(CliSchedule, UnsupportedRanksSaysWhatIsSupported) {
  const CommandResult r = run_cli("schedule ring --ranks 1");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "does not support 1 ranks (supported: n >= 2)")) << r.err;
}

TEST(CliSchedule, BadOptions) {
  CommandResult r = run_cli("schedule ring --ranks 4 --option segments=2");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "has no option 'segments'")) << r.err;
  r = run_cli("schedule ring --ranks 4 --option segments");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "expected key=value")) << r.err;
  r = run_cli("schedule ring --ranks 4 --straggler 1");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "not straggler-aware")) << r.err;
  r = run_cli("schedule ring --ranks 4 --format yaml");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "--format")) << r.err;
  r = run_cli("schedule ring");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(contains(r.err, "--ranks is required")) << r.err;
}

TEST(CliVerify, ReportsTheFirstErrorWithRoundAndTransfer) {
  const CommandResult r = run_cli("verify " + data_path("schedules/double_count.json"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "double_count.json: round 1, transfer 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "double count")) << r.err;
}

TEST(CliVerify, MalformedJsonNamesFileLineAndColumn) {
  const CommandResult r = run_cli("verify " + data_path("schedules/malformed.json"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "malformed.json: line 3, column")) << r.err;
}

TEST(CliVerify, MissingFileAndEmptyStdin) {
  CommandResult r = run_cli("verify /nonexistent/plan.json");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "/nonexistent/plan.json: cannot open file")) << r.err;
  r = run_cli("verify -", "");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, "<stdin>: line 1, column 1: malformed JSON")) << r.err;
}

}  // namespace
}  // namespace ssim::testing
