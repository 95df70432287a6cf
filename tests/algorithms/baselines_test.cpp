// The baseline AllReduce schedules rhd, direct, tree, dbtree, halving_doubling and
// direct_rs_ag: correctness through the
// verifier for many rank counts, their round structure, and their input validation.
#include <gtest/gtest.h>

#include <bit>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

const char* const kBaselines[] = {"rhd", "direct", "tree", "dbtree", "halving_doubling"};

std::vector<int> rank_counts() {
  std::vector<int> ns;
  for (int n = 2; n <= 64; ++n) ns.push_back(n);
  for (int n : {100, 127, 128, 255, 256, 1000, 1024}) ns.push_back(n);
  return ns;
}

Options with(const std::string& key, const std::string& value) {
  Options o;
  o.set(key, value);
  return o;
}

int floor_log2(int n) { return std::bit_width(static_cast<unsigned>(n)) - 1; }
int ceil_log2(int n) { return std::bit_width(static_cast<unsigned>(n) - 1); }

// Verifies and checks what every baseline promises: one send and one receive per rank and
// round at most, and a phase label on every round.
void expect_valid(const Schedule& s, const std::string& what) {
  const VerifyResult v = verify(s);
  ASSERT_TRUE(v.ok()) << what << ": " << v.error->to_string();
  EXPECT_EQ(v.summary.max_sends_per_rank_round, 1) << what;
  EXPECT_EQ(v.summary.max_receives_per_rank_round, 1) << what;
  for (std::size_t r = 0; r < s.rounds.size(); ++r) {
    EXPECT_FALSE(s.rounds[r].phase.empty()) << what << " round " << r;
    EXPECT_FALSE(s.rounds[r].transfers.empty()) << what << " round " << r;
  }
}

TEST(Baselines, VerifyForManyRankCounts) {
  for (const char* name : kBaselines) {
    for (int n : rank_counts()) {
      expect_valid(generate(name, n, Options{}), std::string(name) + " n=" + std::to_string(n));
    }
  }
}

// halving_doubling: nearest partner first. Step k of the reduce-scatter pairs r with r XOR 2^k,
// halving the block (s/2, s/4, ... chunks); the allgather mirrors it; 2 ceil(log2 n) rounds.
TEST(Baselines, HalvingDoublingPairsNearestFirst) {
  for (int n : {2, 3, 8, 12, 16, 64, 100}) {
    const Schedule s = generate("halving_doubling", n, Options{});
    const int p = std::bit_floor(static_cast<unsigned>(n));
    const int steps = floor_log2(p);
    EXPECT_EQ(static_cast<int>(s.rounds.size()), 2 * ceil_log2(n)) << n;
    const std::size_t first = n > p ? 1 : 0;  // after the fold round
    for (int k = 0; k < steps; ++k) {
      const Round& rs = s.rounds[first + k];
      EXPECT_EQ(rs.phase, "reduce-scatter");
      for (const Transfer& t : rs.transfers) {
        EXPECT_EQ(t.src ^ t.dst, 1 << k) << "n=" << n << " step " << k;
        EXPECT_EQ(t.chunk_count(), p >> (k + 1)) << "n=" << n << " step " << k;
      }
      const Round& ag = s.rounds[first + 2 * steps - 1 - k];
      EXPECT_EQ(ag.phase, "allgather");
      for (const Transfer& t : ag.transfers) EXPECT_EQ(t.src ^ t.dst, 1 << k) << "n=" << n << " step " << k;
    }
  }
  // rhd starts with the farthest partner: the two differ for n >= 4.
  EXPECT_EQ(generate("rhd", 8, Options{}).rounds[0].transfers[0].dst, 4);
  EXPECT_EQ(generate("halving_doubling", 8, Options{}).rounds[0].transfers[0].dst, 1);
}

// direct_rs_ag: two rounds, n-1 sends and receives per rank in each, listed so that the i-th
// send of every rank goes to r+i (a perfect matching per step).
TEST(Baselines, DirectRsAgIsTwoAllToAllRounds) {
  for (int n : {2, 3, 4, 7, 16, 33, 100}) {
    const Schedule s = generate("direct_rs_ag", n, Options{});
    const VerifyResult v = verify(s);
    ASSERT_TRUE(v.ok()) << n << ": " << v.error->to_string();
    EXPECT_EQ(s.rounds.size(), 2u);
    EXPECT_EQ(v.summary.max_sends_per_rank_round, n - 1);
    EXPECT_EQ(v.summary.max_receives_per_rank_round, n - 1);
    EXPECT_EQ(s.chunks, n);
    for (const Round& r : s.rounds) {
      ASSERT_EQ(static_cast<int>(r.transfers.size()), n * (n - 1));
      for (std::size_t i = 0; i < r.transfers.size(); ++i) {
        const Transfer& t = r.transfers[i];
        EXPECT_EQ((t.dst - t.src + n) % n, static_cast<int>(i) / n + 1);
      }
    }
  }
}

// Consecutive phase labels and their round counts (what verify's summary reports, without
// replaying the schedule).
std::vector<std::pair<std::string, int>> phases(const Schedule& s) {
  std::vector<std::pair<std::string, int>> out;
  for (const Round& r : s.rounds) {
    if (out.empty() || out.back().first != r.phase) out.emplace_back(r.phase, 0);
    ++out.back().second;
  }
  return out;
}

// Powers of two: log2 n halving then log2 n doubling rounds. Others add one fold and one
// unfold round around rhd among 2^floor(log2 n): 2 floor(log2 n) + 2 = 2 ceil(log2 n).
TEST(Rhd, RoundStructure) {
  for (int n : rank_counts()) {
    const Schedule s = generate("rhd", n, Options{});
    const int steps = floor_log2(n);
    EXPECT_EQ(s.chunks, 1 << steps) << n;
    EXPECT_EQ(s.rounds.size(), static_cast<std::size_t>(2 * ceil_log2(n))) << n;
    std::vector<std::pair<std::string, int>> expect = {{"reduce-scatter", steps},
                                                       {"allgather", steps}};
    if (!std::has_single_bit(static_cast<unsigned>(n))) {
      expect.insert(expect.begin(), {"fold", 1});
      expect.emplace_back("unfold", 1);
    }
    EXPECT_EQ(phases(s), expect) << n;
  }
}

// n = 4: step 0 swaps halves with the rank two away (0 keeps chunks [0,2), sends [2,4) to 2),
// step 1 swaps single chunks with the neighbour (0 sends chunk 1 to 1).
TEST(Rhd, FourRanksByHand) {
  const Schedule s = generate("rhd", 4, Options{});
  ASSERT_EQ(s.rounds.size(), 4u);
  EXPECT_EQ(s.rounds[0].transfers[0], (Transfer{0, 2, 2, 4, Op::reduce}));
  EXPECT_EQ(s.rounds[1].transfers[0], (Transfer{0, 1, 1, 2, Op::reduce}));
  EXPECT_EQ(s.rounds[2].transfers[0], (Transfer{0, 1, 0, 1, Op::copy}));
  EXPECT_EQ(s.rounds[3].transfers[0], (Transfer{0, 2, 0, 2, Op::copy}));
}

// Ring among n-1 (n-2 + n-2 rounds), one exchange, ceil(log2 n) - 1 doubling rounds.
TEST(Direct, PhasesAndRounds) {
  for (int n : {2, 3, 4, 5, 8, 9, 17, 64}) {
    const Schedule s = generate("direct", n, Options{});
    EXPECT_EQ(s.chunks, n - 1);
    std::vector<std::pair<std::string, int>> expect;
    if (n > 2) expect = {{"reduce-scatter", n - 2}, {"allgather", n - 2}};
    expect.emplace_back("straggler-exchange", 1);
    if (n > 2) expect.emplace_back("broadcast", ceil_log2(n) - 1);
    EXPECT_EQ(phases(s), expect) << n;
  }
}

// For every straggler position: the straggler is recorded, takes no part before the
// exchange, and swaps the full buffer in it; the schedule still verifies.
TEST(Direct, EveryStragglerPosition) {
  for (int n : {2, 3, 5, 8, 12}) {
    for (int k = 0; k < n; ++k) {
      const Schedule s = generate("direct", n, with("straggler", std::to_string(k)));
      const std::string what = "n=" + std::to_string(n) + " straggler=" + std::to_string(k);
      expect_valid(s, what);
      ASSERT_TRUE(s.straggler.has_value()) << what;
      EXPECT_EQ(*s.straggler, k) << what;
      std::size_t r = 0;
      for (; s.rounds[r].phase != "straggler-exchange"; ++r) {
        for (const Transfer& t : s.rounds[r].transfers) {
          EXPECT_NE(t.src, k) << what;
          EXPECT_NE(t.dst, k) << what;
        }
      }
      const Round& exchange = s.rounds[r];
      ASSERT_EQ(exchange.transfers.size(), 2u) << what;
      for (const Transfer& t : exchange.transfers) {
        EXPECT_TRUE(t.src == k || t.dst == k) << what;
        EXPECT_EQ(t.chunk_count(), n - 1) << what;
        EXPECT_EQ(t.op, Op::reduce) << what;
      }
    }
  }
}

// Steps of two rounds; S + D - 1 steps per phase with D = floor(log2 n). For n = 2^D the
// lone depth-D rank is a first-round child, so step 0 of the reduce and the last step of
// the broadcast lose their second round; for n = 2 every second round is empty.
TEST(Tree, RoundCounts) {
  struct Case {
    int n, segments, rounds;
  };
  const Case cases[] = {
      {2, 4, 8},     // 4 + 4
      {3, 4, 16},    // D=1: 2*4 per phase
      {8, 4, 22},    // D=3: 2*6 - 1 per phase
      {12, 4, 24},   // D=3: 2*6 per phase
      {100, 1, 24},  // D=6: 2*6 per phase
  };
  for (const Case& c : cases) {
    const Schedule s = generate("tree", c.n, with("segments", std::to_string(c.segments)));
    EXPECT_EQ(s.rounds.size(), static_cast<std::size_t>(c.rounds)) << c.n;
    EXPECT_EQ(phases(s), (std::vector<std::pair<std::string, int>>{{"reduce", c.rounds / 2},
                                                                   {"broadcast", c.rounds / 2}}))
        << c.n;
  }
}

TEST(Tree, SegmentCounts) {
  for (int segments : {1, 2, 3, 7, 64}) {
    for (int n : {2, 3, 4, 5, 8, 13, 32, 100}) {
      const Schedule s = generate("tree", n, with("segments", std::to_string(segments)));
      EXPECT_EQ(s.chunks, segments);
      expect_valid(s, "tree n=" + std::to_string(n) + " segments=" + std::to_string(segments));
    }
  }
}

TEST(Dbtree, SegmentCounts) {
  for (int segments : {2, 3, 7, 64}) {
    for (int n : {2, 3, 4, 5, 8, 13, 32, 100}) {
      const Schedule s = generate("dbtree", n, with("segments", std::to_string(segments)));
      EXPECT_EQ(s.chunks, 2 * segments);
      expect_valid(s, "dbtree n=" + std::to_string(n) + " segments=" + std::to_string(segments));
    }
  }
}

// Read the trees back from the schedule: the receivers of reduce transfers of chunks
// [0, S) are tree A's interior ranks, those of [S, 2S) tree B's. No rank may be in both,
// and each tree has floor(n/2) interior ranks (a heap's count).
TEST(Dbtree, EveryRankInteriorInAtMostOneTree) {
  for (int n : rank_counts()) {
    if (n > 256) continue;
    const Schedule s = generate("dbtree", n, with("segments", "3"));
    std::set<int> interior[2];
    for (const Round& round : s.rounds) {
      for (const Transfer& t : round.transfers) {
        if (t.op == Op::reduce) interior[t.chunk_begin < 3 ? 0 : 1].insert(t.dst);
      }
    }
    EXPECT_EQ(interior[0].size(), static_cast<std::size_t>(n / 2)) << n;
    EXPECT_EQ(interior[1].size(), static_cast<std::size_t>(n / 2)) << n;
    for (int r : interior[0]) EXPECT_EQ(interior[1].count(r), 0u) << "n=" << n << " rank " << r;
  }
}

void expect_input_error(const std::string& name, int n, const Options& o,
                        const std::string& needle) {
  try {
    generate(name, n, o);
    ADD_FAILURE() << name << " n=" << n << ": expected InputError mentioning '" << needle << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Baselines, BadInputIsAnInputError) {
  for (const char* name : kBaselines) expect_input_error(name, 1, Options{}, "supported: n >= 2");
  expect_input_error("tree", 8, with("segments", "0"), "segments=0: must be in [1, 65536]");
  expect_input_error("tree", 8, with("segments", "65537"), "must be in [1, 65536]");
  expect_input_error("tree", 8, with("segments", "many"), "expected an integer");
  expect_input_error("dbtree", 8, with("segments", "1"), "segments=1: must be in [2, 65536]");
  expect_input_error("direct", 8, with("straggler", "8"), "straggler=8: must be in [0, 7]");
  expect_input_error("direct", 8, with("straggler", "-1"), "must be in [0, 7]");
  expect_input_error("rhd", 8, with("segments", "4"), "it takes no options");
  expect_input_error("tree", 8, with("straggler", "1"), "options: segments");
}

}  // namespace
}  // namespace ssim::alg
