// `stragglesim schedule ... --format msccl-xml`: the file it writes is a correct AllReduce for
// the independent reader (tests/algorithms/msccl_reader.hpp); bad flags and schedules beyond
// the runtime's limits are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "cli_support.hpp"
#include "tests/algorithms/msccl_reader.hpp"

namespace ssim::testing {
namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

TEST(CliMscclXml, RingToAFileTheReaderAccepts) {
  char dir_template[] = "/tmp/ssim_msccl_XXXXXX";
  const std::string path = std::string(mkdtemp(dir_template)) + "/ring4.xml";
  const CommandResult r = run_cli("schedule ring --ranks 4 --format msccl -o " + path);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string xml = slurp(path);
  EXPECT_TRUE(contains(xml, "ngpus=\"4\"")) << xml;
  EXPECT_EQ(msccl_reader::check_allreduce(xml), "");
  std::remove(path.c_str());
  rmdir(path.substr(0, path.rfind('/')).c_str());
}

TEST(CliMscclXml, StragglarWithItsStragglerOnStdout) {
  const CommandResult r = run_cli("schedule stragglar --ranks 8 --straggler 5 --format msccl-xml");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "name=\"stragglar (straggler 5)\"")) << r.out.substr(0, 200);
  EXPECT_EQ(msccl_reader::check_allreduce(r.out, {.buffer_chunks = 2}), "");
  // The sizes it serves go to stderr when the XML takes stdout.
  EXPECT_TRUE(contains(r.err,
                       "msccl-xml: nchunksperloop 32 (7 schedule chunks of 4 or 5 MSCCL "
                       "chunks; the largest 9% above the mean)"))
      << r.err;
}

TEST(CliMscclXml, PrintsTheTensorSizesTheFileServes) {
  char dir_template[] = "/tmp/ssim_msccl_XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string path = dir + "/s8.xml";
  const CommandResult r = run_cli("schedule stragglar --ranks 8 --format msccl -o " + path +
                                  " --min-bytes 1MiB --max-bytes 1GiB");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "on 8 ranks whose element count is a multiple of 32, size in [1MiB, "
                       "1GiB]; other calls fall back to NCCL"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "fp32: every power-of-two element count from 262144 (1MiB) to 1GiB"))
      << r.out;
  const std::string xml = slurp(path);
  EXPECT_TRUE(contains(xml, "nchunksperloop=\"32\"")) << xml.substr(0, 300);
  EXPECT_TRUE(contains(xml, "minBytes=\"1048576\" maxBytes=\"1073741824\"")) << xml.substr(0, 300);
  EXPECT_EQ(msccl_reader::check_allreduce(xml, {.buffer_chunks = 2}), "");
  // A chosen nchunksperloop that is not a power of two says so.
  const CommandResult seven =
      run_cli("schedule stragglar --ranks 8 --format msccl --nchunksperloop 7 -o " + path);
  ASSERT_EQ(seven.rc, 0) << seven.err;
  EXPECT_TRUE(contains(seven.out, "no power-of-two element count is served")) << seven.out;
  EXPECT_TRUE(contains(slurp(path), "nchunksperloop=\"7\""));
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

// Bad sizes: one message, exit 1, no file (nor its temporary).
TEST(CliMscclXml, BadSizesAreInputErrorsAndWriteNothing) {
  char dir_template[] = "/tmp/ssim_msccl_XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string path = dir + "/x.xml";
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--nchunksperloop 6",
            "msccl-xml: stragglar with 8 ranks: nchunksperloop 6 cannot hold the schedule's 7 "
            "chunks"},
           {"--min-bytes 1GiB --max-bytes 1MiB",
            "--min-bytes 1GiB is above --max-bytes 1MiB: the runtime would never use the file"},
           {"--max-bytes 16", "maxBytes 16 is below nchunksperloop 32"},
           {"--max-bytes 1xB", "--max-bytes 1xB: invalid size"},
           {"--nchunksperloop 4096", "MSCCL runs at most 256 per thread block"}}) {
    const CommandResult r =
        run_cli("schedule stragglar --ranks 8 --format msccl " + flags + " -o " + path);
    EXPECT_EQ(r.rc, 1) << flags;
    EXPECT_TRUE(contains(r.err, message)) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(std::ifstream(path).good()) << flags;
    EXPECT_FALSE(std::ifstream(path + ".tmp").good()) << flags;
  }
  const CommandResult text = run_cli("schedule ring --ranks 4 --nchunksperloop 8");
  EXPECT_EQ(text.rc, 1);
  EXPECT_TRUE(contains(text.err, "apply to --format msccl-xml only")) << text.err;
  rmdir(dir.c_str());
}

TEST(CliMscclXml, BadFormatIsAUsageError) {
  const CommandResult r = run_cli("schedule ring --ranks 4 --format msccl-json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(contains(r.err, "--format")) << r.err;
  EXPECT_TRUE(contains(r.err, "msccl-xml")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(CliMscclXml, MissingRanksIsAUsageError) {
  const CommandResult r = run_cli("schedule ring --format msccl");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(contains(r.err, "--ranks")) << r.err;
}

TEST(CliMscclXml, BeyondTheRuntimeLimitsIsAnInputErrorAndWritesNothing) {
  const CommandResult r = run_cli("schedule ring --ranks 130 --format msccl");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(
      contains(r.err,
               "msccl-xml: ring with 130 ranks: rank 0's thread block sending to 1 needs over 256 "
               "steps"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(CliMscclXml, BeyondTheMemoryBudgetIsAResourceError) {
  const CommandResult r = run_cli("schedule rhd --ranks 512 --format msccl --max-memory 4MiB");
  EXPECT_EQ(r.rc, 3);
  EXPECT_TRUE(
      contains(r.err, "the MSCCL XML of rhd for 512 ranks (1046528 steps) would need about"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace ssim::testing
