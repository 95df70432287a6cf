// In-network reductions in the IR (alg::SwitchReduce): what the verifier proves, the JSON form
// (both readers), relabelling, and the exports that refuse them.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "algorithms/msccl_xml.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

// NCCL's single-node NVLS AllReduce on n ranks, one chunk per rank: round 0, the switch sums
// chunk c of every rank and delivers it to rank c (multimem.ld_reduce); round 1, rank c
// multicasts its reduced chunk to every other rank (multimem.st).
Schedule hand_nvls(int n) {
  Schedule s = Schedule::make(Collective::allreduce, "hand-nvls", n, n);
  Round& rs = s.add_round("switch-reduce-scatter");
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  for (int c = 0; c < n; ++c) rs.switch_reduces.push_back(SwitchReduce{all, {c}, c, c + 1});
  Round& ag = s.add_round("switch-allgather");
  for (int c = 0; c < n; ++c) {
    std::vector<int> others;
    for (int r = 0; r < n; ++r)
      if (r != c) others.push_back(r);
    ag.switch_reduces.push_back(SwitchReduce{{c}, others, c, c + 1});
  }
  return s;
}

std::string error_of(const Schedule& s) {
  const VerifyResult v = verify(s);
  return v.ok() ? std::string("ok") : v.error->to_string();
}

TEST(SwitchReduce, VerifierAcceptsNvlsAndCountsIt) {
  for (int n : {2, 3, 4, 8}) {
    const VerifyResult v = verify(hand_nvls(n));
    ASSERT_TRUE(v.ok()) << n << ": " << v.error->to_string();
    EXPECT_EQ(v.summary.switch_reduces, static_cast<std::size_t>(2 * n));
    EXPECT_EQ(v.summary.transfers, 0u);
    // Every rank contributes its n chunks and multicasts one; receives one sum and n-1 chunks.
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(v.summary.chunks_sent[r], n + 1);
      EXPECT_EQ(v.summary.chunks_received[r], n);
    }
    EXPECT_NE(format_summary(v.summary).find("switch reductions: " + std::to_string(2 * n)),
              std::string::npos);
  }
}

TEST(SwitchReduce, VerifierFindsWhatIsWrong) {
  // A member left out: the sum lacks its contribution, which the end state names.
  Schedule missing = hand_nvls(4);
  missing.rounds[0].switch_reduces[2].members = {0, 1, 2};
  EXPECT_EQ(error_of(missing),
            "at the end rank 0 holds chunk 2 without the contributions of ranks 3");
  // A member whose data already holds another member's contribution: counted twice.
  Schedule twice = hand_nvls(4);
  Round pre;
  pre.add(1, 0, 0, 1, Op::reduce);  // rank 0's chunk 0 holds rank 1's contribution already
  twice.rounds.insert(twice.rounds.begin(), pre);
  EXPECT_EQ(error_of(twice),
            "round 1: switch reduction 0 (switch reduction of ranks {0, 1, 2, 3} to {0}, chunks [0, 1)) double "
            "count: the switch's sum of chunk 0 adds the contribution of rank 1 twice (member rank 1 brings it "
            "again)");
  // A receiver also written by a transfer in the same round.
  Schedule conflict = hand_nvls(4);
  conflict.rounds[0].add(1, 0, 0, 1, Op::reduce);
  EXPECT_NE(error_of(conflict).find("conflicting writes: rank 0 receives chunk 0 more than once"),
            std::string::npos)
      << error_of(conflict);
  // Form errors, each named with the reduction's index.
  auto with = [](const SwitchReduce& g) {
    Schedule s = hand_nvls(4);
    s.rounds[0].switch_reduces[1] = g;
    return error_of(s);
  };
  EXPECT_NE(with({{0, 1, 2, 9}, {1}, 1, 2})
                .find("switch reduction 1 (switch reduction of ranks {0, 1, 2, 9} to {1}, "
                      "chunks [1, 2)) names rank 9, out of range [0, 4)"),
            std::string::npos)
      << with({{0, 1, 2, 9}, {1}, 1, 2});
  EXPECT_NE(with({{0, 1, 1, 3}, {1}, 1, 2}).find("lists rank 1 twice"), std::string::npos);
  EXPECT_NE(with({{0, 1, 2, 3}, {1, 1}, 1, 2}).find("lists rank 1 twice"), std::string::npos);
  EXPECT_NE(with({{}, {1}, 1, 2}).find("has no members"), std::string::npos);
  EXPECT_NE(with({{0, 1, 2, 3}, {}, 1, 2}).find("has no receivers"), std::string::npos);
  EXPECT_NE(with({{0, 1, 2, 3}, {1}, 2, 2}).find("empty chunk range"), std::string::npos);
  EXPECT_NE(with({{0, 1, 2, 3}, {1}, 3, 5}).find("chunk range outside [0, 4)"), std::string::npos);
  EXPECT_NE(with({{1}, {1}, 1, 2}).find("delivers a rank's own data back to it only"),
            std::string::npos);
  // Allgather: only a rank holding the chunk can contribute it.
  Schedule ag = Schedule::make(Collective::allgather, "hand", 4, 4);
  ag.add_round().switch_reduces.push_back(SwitchReduce{{0, 1}, {2}, 0, 1});
  EXPECT_NE(error_of(ag).find("has rank 1 contribute chunk 0 but it holds no data for it"),
            std::string::npos)
      << error_of(ag);
  Schedule ag_ok = Schedule::make(Collective::allgather, "hand", 4, 4);
  for (int c = 0; c < 4; ++c) {
    std::vector<int> others;
    for (int r = 0; r < 4; ++r)
      if (r != c) others.push_back(r);
    ag_ok.add_round().switch_reduces.push_back(SwitchReduce{{c}, others, c, c + 1});
  }
  EXPECT_EQ(error_of(ag_ok), "ok");
}

TEST(SwitchReduce, RelabelMovesMembersAndReceivers) {
  Schedule s = hand_nvls(3);
  s.relabel({2, 0, 1});
  EXPECT_EQ(s.rounds[0].switch_reduces[0].members, (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(s.rounds[0].switch_reduces[0].receivers, (std::vector<int>{2}));
  EXPECT_EQ(error_of(s), "ok");
}

std::string stream_error(const std::string& text) {
  try {
    std::istringstream in(text);
    const StreamedVerify v = verify_schedule_json(in, "plan.json");
    return v.result.ok() ? "ok" : "invalid: " + v.result.error->to_string();
  } catch (const InputError& e) {
    return e.what();
  }
}

std::string dom_error(const std::string& text) {
  try {
    const VerifyResult v = verify(read_schedule_json(text, "plan.json"));
    return v.ok() ? "ok" : "invalid: " + v.error->to_string();
  } catch (const InputError& e) {
    return e.what();
  }
}

TEST(SwitchReduce, JsonRoundTripsAndOldFilesStillRead) {
  const Schedule s = hand_nvls(4);
  const std::string text = schedule_to_json(s);
  EXPECT_NE(text.find(R"("switch_reduces":[{"chunks":[0,1],"members":[0,1,2,3],"receivers":[0]})"),
            std::string::npos)
      << text;
  EXPECT_EQ(read_schedule_json(text, "plan.json"), s);
  EXPECT_EQ(stream_error(text), "ok");
  // A file without the key (every file written before it existed) reads as before: no reductions.
  const std::string old =
      R"({"collective": "allreduce", "ranks": 2, "chunks": 2, "rounds": [{"transfers": [{"src": 0, "dst": 1, "chunks": [1, 2], "op": "reduce"}, {"src": 1, "dst": 0, "chunks": [0, 1], "op": "reduce"}]}, {"transfers": [{"src": 0, "dst": 1, "chunks": [0, 1], "op": "copy"}, {"src": 1, "dst": 0, "chunks": [1, 2], "op": "copy"}]}]})";
  const Schedule o = read_schedule_json(old, "old.json");
  EXPECT_FALSE(o.has_switch_reduces());
  EXPECT_EQ(schedule_to_json(o).find("switch_reduces"), std::string::npos);
  EXPECT_EQ(stream_error(old), "ok");
}

TEST(SwitchReduce, JsonFormErrorsAreTheSameInBothReaders) {
  const std::string text = schedule_to_json(hand_nvls(4));
  const std::string g1 = R"({"chunks":[1,2],"members":[0,1,2,3],"receivers":[1]})";
  ASSERT_NE(text.find(g1), std::string::npos);
  auto with = [&](const std::string& replacement) {
    std::string t = text;
    t.replace(t.find(g1), g1.size(), replacement);
    return t;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with(R"({"chunks":[1,2],"members":[0,1,2,4],"receivers":[1]})"),
       "plan.json: rounds[0].switch_reduces[1].members[3]: value 4 out of range [0, 3]"},
      {with(R"({"chunks":[1,2],"members":[],"receivers":[1]})"),
       "plan.json: rounds[0].switch_reduces[1].members: expected a non-empty array of ranks, got "
       "[]"},
      {with(R"({"chunks":[1,2],"members":[0,1,2,3]})"),
       "plan.json: rounds[0].switch_reduces[1]: missing key 'receivers'"},
      {with(R"({"chunks":[1,2],"members":[0,1,2,3],"receivers":[1],"switch":"nvls"})"),
       "plan.json: rounds[0].switch_reduces[1]: unknown key 'switch'"},
      {with(R"({"chunks":[2,1],"members":[0,1,2,3],"receivers":[1]})"),
       "plan.json: rounds[0].switch_reduces[1].chunks: empty range [2,1]"},
      {with(R"({"chunks":[1,2],"members":[0,1,2,3],"receivers":["1"]})"),
       "plan.json: rounds[0].switch_reduces[1].receivers[0]: expected an integer"},
      {with("7"), "plan.json: rounds[0].switch_reduces[1]: expected an object, got number"},
      {with(R"({"chunks":[1,2],"members":[0,1,2],"receivers":[1]})"),
       "invalid: at the end rank 0 holds chunk 1 without the contributions of ranks 3"},
  };
  for (const auto& [bad, expected] : cases) {
    const std::string dom = dom_error(bad), streamed = stream_error(bad);
    EXPECT_EQ(streamed, dom);
    EXPECT_EQ(dom.rfind(expected, 0), 0u) << dom;
  }
  const std::string not_array =
      R"({"collective": "allreduce", "ranks": 2, "chunks": 2, "rounds": [{"switch_reduces": {"a": 1}, "transfers": []}]})";
  EXPECT_EQ(dom_error(not_array), "plan.json: rounds[0].switch_reduces: expected an array, got object");
  EXPECT_EQ(stream_error(not_array), dom_error(not_array));
}

TEST(SwitchReduce, MscclExportRefuses) {
  try {
    schedule_to_msccl_xml(hand_nvls(4), {});
    FAIL() << "exported";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("in-network reductions"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ssim::alg
