// `stragglesim schedule ... --format msccl-xml`: the file it writes is a correct AllReduce for
// the independent reader (tests/algorithms/msccl_reader.hpp); bad flags and schedules beyond
// the runtime's limits are clear errors.
#include <gtest/gtest.h>

#include <cstdio>

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
  EXPECT_EQ(msccl_reader::check_allreduce(r.out), "");
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
  EXPECT_TRUE(contains(
      r.err, "msccl-xml: ring with 130 ranks: rank 0's thread block for peer 1 needs over 256 steps"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(CliMscclXml, BeyondTheMemoryBudgetIsAResourceError) {
  const CommandResult r = run_cli("schedule rhd --ranks 512 --format msccl --max-memory 4MiB");
  EXPECT_EQ(r.rc, 3);
  EXPECT_TRUE(contains(r.err, "the MSCCL XML of rhd for 512 ranks (26624 steps) would need about"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace ssim::testing
