// The MSCCL XML export, read back and executed by the independent reader of msccl_reader.hpp:
// every algorithm of the registry at several rank counts, the runtime's limits, and corrupted
// files (a missing step, a dropped or broken dependency) that the reader must reject.
#include "algorithms/msccl_xml.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "msccl_reader.hpp"

namespace ssim::alg {
namespace {

using testing::msccl_reader::check_allreduce;

TEST(MscclXml, EveryAlgorithmRunsToACorrectAllReduce) {
  int exported = 0;
  for (const AlgorithmInfo& a : algorithms()) {
    for (int n : {2, 3, 4, 7, 8, 16}) {
      if (!a.supports_ranks(n)) continue;
      const Schedule s = generate(a.name, n, Options{});
      const std::string xml = schedule_to_msccl_xml(s);
      EXPECT_EQ(check_allreduce(xml), "") << a.name << " n=" << n;
      ++exported;
    }
  }
  EXPECT_GE(exported, 30);
}

TEST(MscclXml, StragglarVariantsRunToACorrectAllReduce) {
  for (const auto& [n, opts] : std::vector<std::pair<int, std::map<std::string, std::string>>>{
           {8, {{"straggler", "3"}}},
           {9, {{"stragglers", "2"}}},
           {12, {{"stragglers", "3"}, {"late", "1,5,0"}}}}) {
    const std::string xml = schedule_to_msccl_xml(generate("stragglar", n, Options(opts)));
    EXPECT_EQ(check_allreduce(xml), "") << "n=" << n;
  }
}

// `deps` is the awaited step's `s` (nops counted), as the runtime's kernel counts its flag; the
// awaited step is a transmission marked hasdep. StragglAR at 16 ranks has awaited steps with nops
// before them, where counting transmissions only would name an earlier step.
TEST(MscclXml, DependenciesNameTheAwaitedStepNumberWithNopsCounted) {
  using testing::msccl_reader::attr;
  using testing::msccl_reader::attr_int;
  using testing::msccl_reader::Node;
  const Node algo =
      testing::msccl_reader::parse_xml(schedule_to_msccl_xml(generate("stragglar", 16, Options{})));
  int checked = 0, after_nops = 0;
  for (const Node& gpu : algo.children) {
    for (const Node& tb : gpu.children) {
      for (const Node& st : tb.children) {
        const int depid = attr_int(st, "depid");
        if (depid < 0) continue;
        const Node& target = gpu.children.at(static_cast<std::size_t>(depid));
        ASSERT_EQ(attr_int(target, "id"), depid);
        const int deps = attr_int(st, "deps");
        ASSERT_GE(deps, 0);
        ASSERT_LT(deps, static_cast<int>(target.children.size()));
        const Node& awaited = target.children[static_cast<std::size_t>(deps)];
        EXPECT_EQ(attr_int(awaited, "s"), deps);
        EXPECT_NE(attr(awaited, "type"), "nop");
        EXPECT_EQ(attr_int(awaited, "hasdep"), 1);
        int nops_before = 0;
        for (int k = 0; k < deps; ++k)
          nops_before += attr(target.children[static_cast<std::size_t>(k)], "type") == "nop";
        after_nops += nops_before > 0;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(after_nops, 10);
}

TEST(MscclXml, HeaderAndRingShape) {
  const std::string xml = schedule_to_msccl_xml(generate("ring", 4, Options{}));
  EXPECT_NE(
      xml.find(
          "<algo name=\"ring\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"4\" ngpus=\"4\" "
          "coll=\"allreduce\" inplace=\"1\""),
      std::string::npos)
      << xml;
  // Ring: each rank has a thread block that only sends (to its successor) and one that only
  // receives (from its predecessor): 3 reductions then 3 copies. Rank 0's, in peer order:
  EXPECT_NE(xml.find("<tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<tb id=\"1\" send=\"-1\" recv=\"3\" chan=\"0\">"), std::string::npos) << xml;
  EXPECT_EQ(std::regex_search(xml, std::regex("type=\"rrc\"")), true);
}

TEST(MscclXml, TransfersBeyondTheCountLimitAreSplit) {
  MscclLimits limits;
  limits.max_count = 2;  // rhd at n=8 moves 4 chunks in its first round
  const std::string xml = schedule_to_msccl_xml(generate("rhd", 8, Options{}), limits);
  EXPECT_EQ(xml.find("cnt=\"4\""), std::string::npos);
  EXPECT_EQ(check_allreduce(xml), "");
}

TEST(MscclXml, SchedulesBeyondTheRuntimeLimitsAreInputErrors) {
  try {
    schedule_to_msccl_xml(generate("ring", 130, Options{}));
    FAIL() << "ring at 130 ranks needs 258 steps in a thread block (over 256)";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("needs over 256 steps; MSCCL runs at most 256 per thread block"),
        std::string::npos)
        << e.what();
  }
  // With nops counted: rhd at 16 ranks has thread blocks of at most 4 transmissions, but 6
  // steps with the nops of its extra dependencies.
  const Schedule st = generate("rhd", 16, Options{});
  MscclLimits tight;
  tight.max_steps_per_threadblock = 6;
  EXPECT_EQ(check_allreduce(schedule_to_msccl_xml(st, tight)), "");
  tight.max_steps_per_threadblock = 5;
  try {
    schedule_to_msccl_xml(st, tight);
    FAIL() << "rhd at 16 ranks has a thread block of 6 steps";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 6 steps; MSCCL runs at most 5 per thread block"),
              std::string::npos)
        << e.what();
  }
  MscclLimits few;
  few.max_threadblocks_per_channel = 2;
  few.max_channels = 2;
  // direct_rs_ag: every rank talks to all 7 others, which takes at least 4 channels of 2.
  EXPECT_THROW(schedule_to_msccl_xml(generate("direct_rs_ag", 8, Options{}), few), InputError);
  few.max_channels = 32;
  const std::string xml = schedule_to_msccl_xml(generate("direct_rs_ag", 8, Options{}), few);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("nchannels=\"(\\d+)\"")));
  EXPECT_GE(std::stoi(m[1].str()), 4);
  EXPECT_EQ(check_allreduce(xml), "");
}

// Corruptions of a correct file: the reader must reject each.
std::string erase_line_containing(std::string xml, const std::string& what) {
  const auto at = xml.find(what);
  if (at == std::string::npos) return xml;
  const auto begin = xml.rfind('\n', at) + 1;
  const auto end = xml.find('\n', at) + 1;
  return xml.erase(begin, end - begin);
}

TEST(MscclXml, ReaderRejectsAMissingStep) {
  const std::string xml = schedule_to_msccl_xml(generate("ring", 4, Options{}));
  ASSERT_EQ(check_allreduce(xml), "");
  // The last step of a thread block (no renumbering needed): an allgather copy goes missing.
  const std::string broken =
      std::regex_replace(xml, std::regex("\n *<step s=\"5\" type=\"r\"[^\n]*"), "",
                         std::regex_constants::format_first_only);
  ASSERT_NE(broken, xml);
  EXPECT_NE(check_allreduce(broken), "");
  // A step from the middle: the numbering has a gap.
  EXPECT_NE(check_allreduce(erase_line_containing(xml, "<step s=\"2\"")), "");
}

TEST(MscclXml, ReaderRejectsADroppedDependency) {
  // rhd: the send of a round reads what another thread block received the round before.
  const std::string xml = schedule_to_msccl_xml(generate("rhd", 8, Options{}));
  ASSERT_EQ(check_allreduce(xml), "");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(xml, m, std::regex("type=\"s\"([^\n]*)depid=\"(\\d+)\" deps=\"(\\d+)\"")));
  std::string broken = xml;
  const auto at = static_cast<std::size_t>(m.position(0));
  broken.replace(at, static_cast<std::size_t>(m.length(0)),
                 "type=\"s\"" + m[1].str() + "depid=\"-1\" deps=\"-1\"");
  const std::string error = check_allreduce(broken);
  EXPECT_NE(error.find("race"), std::string::npos) << error;
}

TEST(MscclXml, ReaderRejectsBrokenDependencyTargets) {
  const std::string xml = schedule_to_msccl_xml(generate("rhd", 8, Options{}));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("depid=\"(\\d+)\" deps=\"(\\d+)\"")));
  const auto at = static_cast<std::size_t>(m.position(0));
  std::string no_step = xml;
  no_step.replace(at, static_cast<std::size_t>(m.length(0)),
                  "depid=\"" + m[1].str() + "\" deps=\"999\"");
  EXPECT_NE(check_allreduce(no_step).find("deps names no step"), std::string::npos)
      << check_allreduce(no_step);
  std::string no_tb = xml;
  no_tb.replace(at, static_cast<std::size_t>(m.length(0)),
                "depid=\"99\" deps=\"" + m[2].str() + "\"");
  EXPECT_NE(check_allreduce(no_tb).find("depid names no thread block"), std::string::npos);
  const std::string unmarked = std::regex_replace(xml, std::regex("hasdep=\"1\""), "hasdep=\"0\"");
  EXPECT_NE(check_allreduce(unmarked).find("not marked hasdep"), std::string::npos);
}

TEST(MscclXml, ReaderRejectsAWrongResultAndBadXml) {
  const std::string xml = schedule_to_msccl_xml(generate("ring", 4, Options{}));
  // Reduce instead of copy in the allgather: contributions counted twice.
  const std::string twice = std::regex_replace(xml, std::regex("type=\"r\""), "type=\"rrc\"");
  EXPECT_NE(check_allreduce(twice).find("times"), std::string::npos) << check_allreduce(twice);
  EXPECT_NE(check_allreduce(xml.substr(0, xml.size() / 2)), "");
  EXPECT_NE(check_allreduce("<algo name=\"x\">"), "");
}

TEST(MscclXml, OnlyAllReduceIsExported) {
  Schedule s = Schedule::make(Collective::allgather, "x", 2, 2);
  EXPECT_THROW(schedule_to_msccl_xml(s), InputError);
}

}  // namespace
}  // namespace ssim::alg
