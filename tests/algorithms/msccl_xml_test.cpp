// The MSCCL XML export, read back and executed by the independent reader of msccl_reader.hpp
// (written from the runtime's parser and kernel): every algorithm of the registry at every rank
// count to 17 and sampled larger ones up to the largest it exports, in several seeded orders and
// connection buffer depths; the runtime's limits; sizes (nchunksperloop, minBytes, maxBytes); and
// corrupted files the reader must reject, the exporter's old dependency numbering included.
#include "algorithms/msccl_xml.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <tuple>

#include "algorithms/registry.hpp"
#include "common/error.hpp"
#include "msccl_reader.hpp"

namespace ssim::alg {
namespace {

using testing::msccl_reader::check_allreduce;

std::string xml_of(const Schedule& s, const MscclExport& ex = {}) {
  return schedule_to_msccl_xml(s, ex).xml;
}

// The file run in several seeded orders, with connection buffers of 2 chunks (the runtime's
// tightest, for large tensors), 3 chunks and unbounded; the first run also checks with vector
// clocks that conflicting accesses are ordered. "" when every run ends correctly.
std::string run_many(const std::string& xml, int orders = 2) {
  std::vector<testing::msccl_reader::RunOptions> runs;
  for (int depth : {2, 3, 0}) {
    for (int k = 0; k < orders; ++k) {
      runs.push_back(
          {.seed = 1000003u * static_cast<std::uint64_t>(k + 1) + static_cast<std::uint64_t>(depth),
           .buffer_chunks = depth,
           .race_check_max_tbs = runs.empty() ? std::size_t{600} : 0});
    }
  }
  return testing::msccl_reader::check_allreduce_runs(xml, runs);
}

TEST(MscclXml, EveryAlgorithmRunsToACorrectAllReduce) {
  int exported = 0;
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.in_network) continue;  // switch reductions: switch_reduce_test, nvls_test
    for (int n : {2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 16, 17}) {
      if (!a.supports_ranks(n)) continue;
      const Schedule s = generate(a.name, n, Options{});
      const std::string xml = xml_of(s);
      EXPECT_EQ(run_many(xml), "") << a.name << " n=" << n;
      ++exported;
    }
  }
  EXPECT_GE(exported, 60);  // every algorithm, most rank counts
}

TEST(MscclXml, StragglarVariantsRunToACorrectAllReduce) {
  for (const auto& [n, opts] : std::vector<std::pair<int, std::map<std::string, std::string>>>{
           {8, {{"straggler", "3"}}},
           {9, {{"stragglers", "2"}}},
           {12, {{"stragglers", "3"}, {"late", "1,5,0"}}},
           {16, {{"stragglers", "2"}}},
           {16, {{"straggler", "0"}}}}) {
    const std::string xml = xml_of(generate("stragglar", n, Options(opts)));
    EXPECT_EQ(run_many(xml), "") << "n=" << n;
  }
}

// `deps` is the awaited step's `s` (nops counted), as the runtime's kernel counts its flag; the
// awaited step is a transmission marked hasdep. StragglAR at 16 ranks has awaited steps with nops
// before them, where counting transmissions only would name an earlier step.
TEST(MscclXml, DependenciesNameTheAwaitedStepNumberWithNopsCounted) {
  using testing::msccl_reader::attr;
  using testing::msccl_reader::attr_int;
  using testing::msccl_reader::Node;
  const Node algo = testing::msccl_reader::parse_xml(xml_of(generate("stragglar", 16, Options{})));
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
  const std::string xml = xml_of(generate("ring", 4, Options{}));
  EXPECT_NE(
      xml.find(
          "<algo name=\"ring\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"4\" ngpus=\"4\" "
          "coll=\"allreduce\" inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"0\">"),
      std::string::npos)
      << xml;
  // Ring: each rank has a thread block that only sends (to its successor) and one that only
  // receives (from its predecessor): 3 reductions then 3 copies. Rank 0's, in peer order:
  EXPECT_NE(xml.find("<tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<tb id=\"1\" send=\"-1\" recv=\"3\" chan=\"0\">"), std::string::npos) << xml;
  EXPECT_EQ(std::regex_search(xml, std::regex("type=\"rrc\"")), true);
  EXPECT_EQ(xml.find("cnt=\"2\""), std::string::npos);
}

// A pair that exchanges several chunks in one round (rhd: 4 at 8 ranks) gets one thread block
// per direction and one chunk per step: with a connection buffer of 2 chunks, one thread block
// per peer sending first or whole-transfer steps would leave both ranks waiting for room.
TEST(MscclXml, ExchangesRunWithConnectionBuffersOfOneChunk) {
  const std::string xml = xml_of(generate("rhd", 8, Options{}));
  EXPECT_NE(xml.find("<tb id=\"0\" send=\"1\" recv=\"-1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<tb id=\"1\" send=\"-1\" recv=\"1\""), std::string::npos) << xml;
  for (int seed = 1; seed <= 5; ++seed)
    EXPECT_EQ(check_allreduce(xml, {.seed = static_cast<std::uint64_t>(seed), .buffer_chunks = 1}),
              "");
}

// The reader's connection buffers: two ranks that each send all 3 chunks in one step before
// receiving, in one thread block per peer, finish when a connection holds 3 chunks and wait for
// each other forever when it holds 2.
TEST(MscclXml, ReaderBoundsConnectionBuffers) {
  std::string xml =
      "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"3\" ngpus=\"2\" "
      "coll=\"allreduce\" inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"0\">\n";
  for (int g = 0; g < 2; ++g) {
    const std::string peer = std::to_string(1 - g);
    xml += "<gpu id=\"" + std::to_string(g) +
           "\" i_chunks=\"3\" o_chunks=\"3\" s_chunks=\"0\">\n<tb id=\"0\" send=\"" + peer +
           "\" recv=\"" + peer + "\" chan=\"0\">\n";
    for (const char* type : {"s", "rrc"}) {
      xml += std::string("<step s=\"") + (type[0] == 's' ? "0" : "1") + "\" type=\"" + type +
             "\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"3\" depid=\"-1\" "
             "deps=\"-1\" hasdep=\"0\"/>\n";
    }
    xml += "</tb>\n</gpu>\n";
  }
  xml += "</algo>\n";
  EXPECT_EQ(check_allreduce(xml, {.buffer_chunks = 0}), "");
  EXPECT_EQ(check_allreduce(xml, {.buffer_chunks = 3}), "");
  const std::string stuck = check_allreduce(xml, {.buffer_chunks = 2});
  EXPECT_NE(stuck.find("deadlock: gpu 0 tb 0 step 0 (s, iteration 0) waits for room to gpu 1"),
            std::string::npos)
      << stuck;
}

// Larger rank counts, sampled, up to the largest each algorithm exports at (docs/gpu.md, "MSCCL XML
// export"), and the next one refused with the limit named.
TEST(MscclXml, LargerRankCountsUpToTheLimits) {
  for (const auto& [name, n] : std::vector<std::pair<std::string, int>>{{"ring", 24},
                                                                        {"ring", 129},
                                                                        {"rhd", 32},
                                                                        {"stragglar", 24},
                                                                        {"stragglar", 66},
                                                                        {"dbtree", 40},
                                                                        {"tree", 64}}) {
    const Schedule s = generate(name, n, Options{});
    const std::string xml = xml_of(s);
    EXPECT_EQ(check_allreduce(xml, {.seed = 5, .buffer_chunks = 2, .race_check_max_tbs = 0}), "")
        << name << " n=" << n;
  }
  try {
    xml_of(generate("ring", 130, Options{}));
    FAIL() << "ring at 130 ranks needs 258 steps in a thread block (over 256)";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs over 256 steps"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MSCCL_MAX_NUM_STEPS"), std::string::npos) << e.what();
  }
}

// The largest rank counts docs/gpu.md states, per algorithm (default options and nchunksperloop):
// they export, one more is an input error naming the limit.
TEST(MscclXml, LargestRankCountsInTheReadme) {
  for (const auto& [name, n, limit] : std::vector<std::tuple<std::string, int, std::string>>{
           {"tree", 1024, "MAX_SUBS"},
           {"dbtree", 1024, "MAX_SUBS"},
           {"straggler_tree", 1024, "MAX_SUBS"},
           {"rhd", 256, "MSCCL_MAX_NUM_STEPS"},
           {"halving_doubling", 256, "MSCCL_MAX_NUM_STEPS"},
           {"ring", 129, "MSCCL_MAX_NUM_STEPS"},
           {"hierarchical", 129, "MSCCL_MAX_NUM_STEPS"},
           {"direct", 87, "MSCCL_MAX_NUM_STEPS"},
           {"stragglar", 109, "MSCCL_MAX_NUM_THREAD_BLOCKS"},
           {"direct_rs_ag", 65, "depid"},
           {"oneshot", 65, "depid"},
           {"twoshot", 65, "depid"},
           {"stragglar_hier", 33, "MSCCL_MAX_NUM_STEPS"}}) {
    EXPECT_NO_THROW(xml_of(generate(name, n, Options{}))) << name << " n=" << n;
    try {
      xml_of(generate(name, n + 1, Options{}));
      ADD_FAILURE() << name << " exports at " << n + 1 << " ranks";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(limit), std::string::npos) << e.what();
    }
  }
}

// The default nchunksperloop is a power of two (so power-of-two tensors use the file), with
// schedule chunks spread over it as evenly as whole MSCCL chunks allow.
TEST(MscclXml, ChunksPerLoopIsChosenForPowerOfTwoSizes) {
  EXPECT_EQ(msccl_nchunksperloop_candidates(8), (std::vector<int>{8}));
  EXPECT_EQ(msccl_nchunksperloop_candidates(7), (std::vector<int>{32, 16, 8, 7}));
  EXPECT_EQ(msccl_chunk_shares(7, 32), (std::vector<int>{4, 5, 4, 5, 4, 5, 5}));
  const MscclExported f = schedule_to_msccl_xml(generate("stragglar", 8, Options{}));
  EXPECT_EQ(f.nchunksperloop, 32);
  EXPECT_NE(f.xml.find("nchunksperloop=\"32\""), std::string::npos);
  EXPECT_NE(f.xml.find("i_chunks=\"32\""), std::string::npos);
  EXPECT_EQ(run_many(f.xml), "");
  // Given: any value from the schedule's chunks up.
  MscclExport ex;
  ex.nchunksperloop = 7;
  EXPECT_EQ(run_many(xml_of(generate("stragglar", 8, Options{}), ex)), "");
  ex.nchunksperloop = 100;
  EXPECT_EQ(run_many(xml_of(generate("stragglar", 8, Options{}), ex), 1), "");
  ex.nchunksperloop = 6;
  try {
    xml_of(generate("stragglar", 8, Options{}), ex);
    FAIL() << "6 MSCCL chunks cannot hold 7 schedule chunks";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nchunksperloop 6 cannot hold the schedule's 7 chunks"),
              std::string::npos)
        << e.what();
  }
  // A value whose file is beyond a limit is refused, not replaced.
  ex.nchunksperloop = 4096;
  EXPECT_THROW(xml_of(generate("ring", 8, Options{}), ex), InputError);
}

TEST(MscclXml, MinAndMaxBytesAreWrittenAndChecked) {
  MscclExport ex;
  ex.min_bytes = 1 << 20;
  ex.max_bytes = 1 << 30;
  const std::string xml = xml_of(generate("ring", 4, Options{}), ex);
  EXPECT_NE(xml.find("minBytes=\"1048576\" maxBytes=\"1073741824\""), std::string::npos);
  ex.min_bytes = ex.max_bytes + 1;
  try {
    xml_of(generate("ring", 4, Options{}), ex);
    FAIL() << "minBytes > maxBytes";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("minBytes 1073741825 is above maxBytes 1073741824"),
              std::string::npos)
        << e.what();
  }
  ex.min_bytes = 0;
  ex.max_bytes = 2;  // below one byte per MSCCL chunk
  EXPECT_THROW(xml_of(generate("ring", 4, Options{}), ex), InputError);
}

TEST(MscclXml, SchedulesBeyondTheRuntimeLimitsAreInputErrors) {
  auto error = [](const std::string& name, int n, const MscclLimits& limits) {
    MscclExport ex;
    ex.limits = limits;
    try {
      xml_of(generate(name, n, Options{}), ex);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto has = [](const std::string& e, const std::string& what) {
    return e.find(what) != std::string::npos;
  };
  // With nops counted: tree at 8 ranks has thread blocks with more steps than the most
  // transmissions any thread block has; a limit of that many transmissions is refused by the
  // count with nops, the largest step count passes.
  const Schedule st = generate("tree", 8, Options{});
  int most_steps = 0, most_transmissions = 0;
  for (const auto& gpu : testing::msccl_reader::parse_xml(xml_of(st)).children) {
    for (const auto& tb : gpu.children) {
      int transmissions = 0;
      for (const auto& step : tb.children)
        transmissions += testing::msccl_reader::attr(step, "type") != "nop";
      most_steps = std::max(most_steps, static_cast<int>(tb.children.size()));
      most_transmissions = std::max(most_transmissions, transmissions);
    }
  }
  ASSERT_GT(most_steps, most_transmissions);
  MscclLimits tight;
  tight.max_steps_per_threadblock = most_steps;
  MscclExport ex;
  ex.limits = tight;
  EXPECT_EQ(run_many(xml_of(st, ex), 1), "");
  tight.max_steps_per_threadblock = most_transmissions;
  const std::string e = error("tree", 8, tight);
  EXPECT_TRUE(has(e, " steps; MSCCL runs at most " + std::to_string(most_transmissions) +
                         " per thread block (MSCCL_MAX_NUM_STEPS)"))
      << e;
  EXPECT_FALSE(has(e, "needs over")) << e;
  MscclLimits nodes;
  nodes.max_nodes = 60;  // ring, 8 ranks: 1 + 8 + 2 thread blocks + 4 x 7 steps = 39 per rank
  EXPECT_EQ(error("ring", 8, nodes), "no error");
  nodes.max_nodes = 38;
  EXPECT_TRUE(has(error("ring", 8, nodes), "MSCCL's parser stores at most 38 (MAX_NODES)"))
      << error("ring", 8, nodes);
  MscclLimits depid;
  depid.max_depid = 5;  // direct_rs_ag at 8 ranks: 14 thread blocks per rank, waits on all
  EXPECT_TRUE(has(error("direct_rs_ag", 8, depid), "MSCCL stores depid in 8 bits (at most 5)"))
      << error("direct_rs_ag", 8, depid);
  // Where a rank waits for thread blocks beyond max_depid, the awaited ones get the low ids:
  // StragglAR's straggler talks to every rank (30 thread blocks at 16 ranks) but waits for 16.
  MscclLimits low;
  low.max_depid = 20;
  ex.limits = low;
  const std::string renumbered = xml_of(generate("stragglar", 16, Options{}), ex);
  EXPECT_EQ(run_many(renumbered, 1), "");
  EXPECT_FALSE(std::regex_search(renumbered, std::regex("depid=\"(2[1-9]|[3-9]\\d)\"")));
  EXPECT_NE(renumbered, xml_of(generate("stragglar", 16, Options{})));
  MscclLimits blocks;
  blocks.max_threadblocks_per_gpu = 13;
  EXPECT_TRUE(has(error("direct_rs_ag", 8, blocks), "needs 14 thread blocks"))
      << error("direct_rs_ag", 8, blocks);
  MscclLimits gpus;
  gpus.max_gpus = 7;
  EXPECT_TRUE(has(error("ring", 8, gpus), "at most 7 <gpu> elements (MAX_SUBS)"));
  MscclLimits few;
  few.max_threadblocks_per_channel = 2;
  few.max_channels = 2;
  // direct_rs_ag: every rank talks to all 7 others, which takes at least 4 channels of 2.
  EXPECT_TRUE(has(error("direct_rs_ag", 8, few), "need a channel beyond MSCCL's 2"));
  few.max_channels = 32;
  ex.limits = few;
  const std::string xml = xml_of(generate("direct_rs_ag", 8, Options{}), ex);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("nchannels=\"(\\d+)\"")));
  EXPECT_GE(std::stoi(m[1].str()), 4);
  EXPECT_EQ(run_many(xml, 1), "");
}

// The exporter's old numbering (deps counting transmissions, nops excluded): the reader must
// reject it where it differs, and, waiting as the runtime does (until the flag reaches deps),
// find the wrong sums the runtime would produce.
std::string with_transmission_counted_deps(const std::string& xml) {
  using testing::msccl_reader::attr;
  using testing::msccl_reader::attr_int;
  const testing::msccl_reader::Node algo = testing::msccl_reader::parse_xml(xml);
  std::map<std::pair<int, int>, std::map<int, int>> index;  // (gpu, tb) -> s -> transmission
  for (const auto& gpu : algo.children) {
    for (const auto& tb : gpu.children) {
      int k = 0;
      for (const auto& st : tb.children)
        if (attr(st, "type") != "nop")
          index[{attr_int(gpu, "id"), attr_int(tb, "id")}][attr_int(st, "s")] = k++;
    }
  }
  std::string out;
  std::size_t at = 0;
  int gpu = -1;
  const std::regex step("<gpu id=\"(\\d+)\"|depid=\"(\\d+)\" deps=\"(\\d+)\"");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), step); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    out += xml.substr(at, static_cast<std::size_t>(m.position(0)) - at);
    at = static_cast<std::size_t>(m.position(0) + m.length(0));
    if (m[1].matched) {
      gpu = std::stoi(m[1].str());
      out += m.str(0);
    } else {
      const int depid = std::stoi(m[2].str());
      out += "depid=\"" + m[2].str() + "\" deps=\"" +
             std::to_string(index[{gpu, depid}].at(std::stoi(m[3].str()))) + "\"";
    }
  }
  return out + xml.substr(at);
}

TEST(MscclXml, ReaderFindsTheOldDependencyNumberingWrong) {
  for (int n : {9, 16}) {
    const std::string old =
        with_transmission_counted_deps(xml_of(generate("stragglar", n, Options{})));
    EXPECT_NE(check_allreduce(old), "") << n;
    const std::string wrong =
        check_allreduce(old, {.race_check_max_tbs = 0, .exact_targets = false});
    EXPECT_NE(wrong.find("contributions"), std::string::npos) << n << ": " << wrong;
  }
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
  const std::string xml = xml_of(generate("ring", 4, Options{}));
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
  const std::string xml = xml_of(generate("rhd", 8, Options{}));
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
  const std::string xml = xml_of(generate("rhd", 8, Options{}));
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
  const std::string xml = xml_of(generate("ring", 4, Options{}));
  // Reduce instead of copy in the allgather: contributions counted twice.
  const std::string twice = std::regex_replace(xml, std::regex("type=\"r\""), "type=\"rrc\"");
  EXPECT_NE(check_allreduce(twice).find("contributions"), std::string::npos)
      << check_allreduce(twice);
  EXPECT_NE(check_allreduce(xml.substr(0, xml.size() / 2)), "");
  EXPECT_NE(check_allreduce("<algo name=\"x\">"), "");
}

TEST(MscclXml, OnlyAllReduceIsExported) {
  Schedule s = Schedule::make(Collective::allgather, "x", 2, 2);
  EXPECT_THROW(xml_of(s), InputError);
}

}  // namespace
}  // namespace ssim::alg
