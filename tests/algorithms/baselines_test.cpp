// The baseline AllReduce schedules rhd, direct, tree, dbtree, halving_doubling, direct_rs_ag,
// oneshot and twoshot: correctness through the
// verifier for many rank counts, their round structure, and their input validation.
#include <gtest/gtest.h>

#include <bit>
#include <set>
#include <string>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/bits.hpp"
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

// oneshot and twoshot (MSCCL++'s direct loads): step i of every round is rank r loading from
// r+i, a perfect matching; oneshot moves the whole buffer in one round, twoshot chunk r of the
// loading rank in the reduce-scatter and the peer's own chunk in the allgather.
TEST(Baselines, DirectLoadsAreOneAndTwoAllToAllRounds) {
  for (int n : {2, 3, 4, 7, 16, 33, 100}) {
    for (const char* name : {"oneshot", "twoshot"}) {
      const bool one = std::string(name) == "oneshot";
      const Schedule s = generate(name, n, Options{});
      const VerifyResult v = verify(s);
      ASSERT_TRUE(v.ok()) << name << " " << n << ": " << v.error->to_string();
      EXPECT_EQ(s.rounds.size(), one ? 1u : 2u) << name;
      EXPECT_EQ(s.chunks, one ? 1 : n) << name;
      EXPECT_EQ(v.summary.max_sends_per_rank_round, n - 1) << name;
      EXPECT_EQ(v.summary.max_receives_per_rank_round, n - 1) << name;
      for (std::size_t k = 0; k < s.rounds.size(); ++k) {
        const Round& r = s.rounds[k];
        ASSERT_EQ(static_cast<int>(r.transfers.size()), n * (n - 1));
        for (std::size_t i = 0; i < r.transfers.size(); ++i) {
          const Transfer& t = r.transfers[i];
          EXPECT_EQ((t.src - t.dst + n) % n, static_cast<int>(i) / n + 1) << name << " n=" << n;
          EXPECT_EQ(t.dst, static_cast<int>(i) % n) << name << " n=" << n;
          const int chunk = one ? 0 : (k == 0 ? t.dst : t.src);
          EXPECT_EQ(t.chunk_begin, chunk) << name << " n=" << n << " round " << k;
          EXPECT_EQ(t.chunk_end, one ? 1 : chunk + 1) << name << " n=" << n << " round " << k;
          EXPECT_EQ(t.op, k == 0 ? Op::reduce : Op::copy) << name << " n=" << n;
        }
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

// nonpow2=rabenseifner (Rabenseifner-Traff pairwise elimination) for every n in 2..300: it
// verifies, keeps 2 ceil(log2 n) rounds, equals the default for powers of two, and its closed
// form is the schedule's exact time (schedule_cost) and the paper's RHD row when gamma = 0.
TEST(Rhd, RabenseifnerEveryRankCount) {
  const Options rt = with("nonpow2", "rabenseifner");
  const CostParams params[] = {{3e-6, 1.0 / (450.0 * (1 << 30)), 0.0},
                               {3e-6, 1.0 / (450.0 * (1 << 30)), 1.0 / (450.0 * (1 << 30))},
                               {1e-6, 1e-12, 3e-13}};
  const CostParams& paper = params[0];
  for (int n = 2; n <= 300; ++n) {
    const std::string what = "rhd nonpow2=rabenseifner n=" + std::to_string(n);
    const Schedule s = generate("rhd", n, rt);
    expect_valid(s, what);
    const int p = std::bit_floor(static_cast<unsigned>(n));
    ASSERT_EQ(s.chunks, p) << what;
    EXPECT_EQ(s.rounds.size(), static_cast<std::size_t>(2 * ceil_log2(n))) << what;
    if (n == p) {
      EXPECT_EQ(s.rounds, generate("rhd", n, Options{}).rounds) << what;
    } else {
      EXPECT_EQ(phases(s).front(), (std::pair<std::string, int>{"fold", 1})) << what;
      EXPECT_EQ(phases(s).back(), (std::pair<std::string, int>{"unfold", 1})) << what;
      // Every transfer moves at most half the buffer.
      for (const Round& r : s.rounds)
        for (const Transfer& t : r.transfers) EXPECT_LE(t.chunk_count(), p / 2) << what;
    }
    const AlgorithmInfo& info = find_algorithm("rhd");
    for (const CostParams& cp : params) {
      const double bytes = 1024.0 * p;
      const double expect = info.cost(n, bytes, cp, rt);
      EXPECT_NEAR(schedule_cost(s, bytes, cp), expect, 1e-9 * expect) << what;
    }
    const double gib = 1024.0 * 1024 * 1024;
    EXPECT_NEAR(rhd_rabenseifner_cost(n, gib, paper), rhd_paper_cost(n, gib, paper), 1e-12) << n;
    if (n != p) {
      EXPECT_NEAR(rhd_cost(n, gib, paper) - rhd_rabenseifner_cost(n, gib, paper),
                  gib * paper.beta, 1e-12)
          << n;
    }
  }
}

// n = 3 by hand: pair (0, 1) swaps halves, virtual rank 1 is rank 2. Halving: 1 sends the
// pair's upper half to 2, 2 sends its lower half to 0 (transfers listed by virtual sender). Doubling: 0 sends the lower half to 2,
// 2 the upper half back to 1 (the member that sent it); then the pair swaps halves again.
TEST(Rhd, RabenseifnerThreeRanksByHand) {
  const Schedule s = generate("rhd", 3, with("nonpow2", "rabenseifner"));
  ASSERT_EQ(s.rounds.size(), 4u);
  EXPECT_EQ(s.rounds[0].transfers,
            (std::vector<Transfer>{{0, 1, 1, 2, Op::reduce}, {1, 0, 0, 1, Op::reduce}}));
  EXPECT_EQ(s.rounds[1].transfers,
            (std::vector<Transfer>{{1, 2, 1, 2, Op::reduce}, {2, 0, 0, 1, Op::reduce}}));
  EXPECT_EQ(s.rounds[2].transfers,
            (std::vector<Transfer>{{0, 2, 0, 1, Op::copy}, {2, 1, 1, 2, Op::copy}}));
  EXPECT_EQ(s.rounds[3].transfers,
            (std::vector<Transfer>{{0, 1, 0, 1, Op::copy}, {1, 0, 1, 2, Op::copy}}));
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

// straggler_tree for every n in 2..300, several segment counts and straggler positions: it
// verifies, the straggler talks only in the exchange (with the tree's root, full buffer), and
// the closed forms are exact: all arriving together (straggler_tree_cost) and, with the
// straggler later than the reduce among the others, its time after it arrives
// (straggler_tree_ideal_cost).
TEST(StragglerTree, EveryRankCountSegmentsAndStraggler) {
  const CostParams params[] = {{3e-6, 1.0 / (450.0 * (1 << 30)), 0.0},
                               {3e-6, 1.0 / (450.0 * (1 << 30)), 1.0 / (450.0 * (1 << 30))},
                               {1e-6, 1e-12, 3e-13}};
  const AlgorithmInfo& info = find_algorithm("straggler_tree");
  for (int n = 2; n <= 300; ++n) {
    for (int segments : {1, 2, 3, 16}) {
      if (n > 40 && segments != 16 && n % 7 != 0) continue;  // keep the test fast
      for (int straggler : {n - 1, 0, n / 2}) {
        Options o = with("segments", std::to_string(segments));
        o.set("straggler", std::to_string(straggler));
        const std::string what = "straggler_tree n=" + std::to_string(n) +
                                 " segments=" + std::to_string(segments) +
                                 " straggler=" + std::to_string(straggler);
        const Schedule s = generate("straggler_tree", n, o);
        expect_valid(s, what);
        ASSERT_EQ(s.straggler, straggler) << what;
        const int root = straggler == 0 ? n - 1 : 0;
        std::size_t exchange = 0;
        for (std::size_t r = 0; r < s.rounds.size(); ++r) {
          if (s.rounds[r].phase == "straggler-exchange") {
            exchange = r;
            ASSERT_EQ(s.rounds[r].transfers,
                      (std::vector<Transfer>{{root, straggler, 0, segments, Op::reduce},
                                             {straggler, root, 0, segments, Op::reduce}}))
                << what;
            continue;
          }
          EXPECT_EQ(s.rounds[r].phase, exchange == 0 ? "reduce" : "broadcast") << what;
          for (const Transfer& t : s.rounds[r].transfers) {
            EXPECT_NE(t.src, straggler) << what;
            EXPECT_NE(t.dst, straggler) << what;
          }
        }
        if (straggler != n - 1 && straggler != 0) continue;  // the costs do not depend on it
        const double bytes = 1024.0 * segments;
        for (const CostParams& p : params) {
          const double expect = info.cost(n, bytes, p, o);
          EXPECT_NEAR(schedule_cost(s, bytes, p), expect, 1e-9 * expect) << what;
          std::vector<double> arrival(static_cast<std::size_t>(n), 0.0);
          const double delay = 2 * expect + 1e-3;
          arrival[static_cast<std::size_t>(straggler)] = delay;
          const double ideal = straggler_tree_ideal_cost(n, bytes, segments, p);
          EXPECT_NEAR(schedule_cost(s, bytes, p, arrival) - delay, ideal, 1e-9 * delay) << what;
        }
      }
    }
  }
}

// n = 4, 2 segments, straggler 3: ranks 0..2 form a tree rooted at 0 (1 in the first round of
// a step, 2 in the second); the reduce takes two steps, then 3 and 0 swap both segments, then
// 0 sends each segment to 1 and 2.
TEST(StragglerTree, FourRanksByHand) {
  Options o = with("segments", "2");
  const Schedule s = generate("straggler_tree", 4, o);
  const std::vector<std::vector<Transfer>> expect = {
      {{1, 0, 0, 1, Op::reduce}},
      {{2, 0, 0, 1, Op::reduce}},
      {{1, 0, 1, 2, Op::reduce}},
      {{2, 0, 1, 2, Op::reduce}},
      {{0, 3, 0, 2, Op::reduce}, {3, 0, 0, 2, Op::reduce}},
      {{0, 1, 0, 1, Op::copy}},
      {{0, 2, 0, 1, Op::copy}},
      {{0, 1, 1, 2, Op::copy}},
      {{0, 2, 1, 2, Op::copy}},
  };
  ASSERT_EQ(s.rounds.size(), expect.size());
  for (std::size_t r = 0; r < expect.size(); ++r) EXPECT_EQ(s.rounds[r].transfers, expect[r]) << r;
  // Hand-derived times with alpha 1, beta 1 per byte, 10-byte segments, gamma 0: the reduce
  // 4 rounds of 11, the exchange 1 + 20, the broadcast 4 rounds of 11.
  const CostParams unit{1.0, 1.0, 0.0};
  EXPECT_DOUBLE_EQ(straggler_tree_cost(4, 20.0, 2, unit), 4 * 11 + 21 + 4 * 11);
  EXPECT_DOUBLE_EQ(schedule_cost(s, 20.0, unit), 4 * 11 + 21 + 4 * 11);
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
  expect_input_error("rhd", 8, with("segments", "4"), "options: nonpow2");
  expect_input_error("rhd", 6, with("nonpow2", "traff"), "nonpow2=traff: expected fold or rabenseifner");
  expect_input_error("tree", 8, with("straggler", "1"), "options: segments");
  expect_input_error("straggler_tree", 8, with("straggler", "8"), "straggler=8: must be in [0, 7]");
  expect_input_error("straggler_tree", 8, with("segments", "0"), "segments=0: must be in [1, 65536]");
  expect_input_error("straggler_tree", 1, Options{}, "supported: n >= 2");
}

}  // namespace
}  // namespace ssim::alg
