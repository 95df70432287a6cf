// StragglAR for k >= 2 late ranks (option stragglers=k): verified for a stratified set of
// n <= 130 and k = 2..4 (the full sweep is `stragglesim rounds --ranks 4..130 --stragglers 2..4`,
// which generates and verifies every schedule), the fold-in structure, the late-rank relabelling, the round bound, bad options.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/stragglar.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"
#include "round_timing.hpp"

namespace ssim::alg {
namespace {

Options with_k(int k) {
  Options o;
  o.set("stragglers", std::to_string(k));
  return o;
}

// Every n up to 40, then every 7th, plus the powers of two and their neighbours up to 130: the
// whole n <= 130 sweep takes ~25 s on a loaded 2-core machine, this subset ~10x less.
std::vector<int> stratified_rank_counts() {
  std::vector<int> ns;
  for (int n = 1; n <= 40; ++n) ns.push_back(n);
  for (int n = 41; n <= 130; n += 7) ns.push_back(n);
  for (int n : {63, 64, 65, 127, 128, 129, 130}) ns.push_back(n);
  std::sort(ns.begin(), ns.end());
  ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
  return ns;
}

TEST(StragglarK, VerifiesForStratifiedRankCountsUpTo130AndK2To4) {
  for (int k = 2; k <= 4; ++k) {
    for (int n : stratified_rank_counts()) {
      if (n < k + 2) continue;
      const Schedule s = generate("stragglar", n, with_k(k));
      const VerifyResult v = verify(s);
      ASSERT_TRUE(v.ok()) << "n=" << n << " k=" << k << ": " << v.error->to_string();
      const int m = n - k;
      ASSERT_EQ(s.chunks, m);
      ASSERT_EQ(s.straggler, n - 1);
      std::vector<int> late;
      for (int i = m; i < n; ++i) late.push_back(i);
      ASSERT_EQ(s.late, late);
      // ring reduce-scatter among the m early ranks, fold-in, then the rounds after the last
      // late rank, one send and one receive per rank and round.
      const int post = stragglar_rounds(n, k);
      ASSERT_EQ(s.rounds.size(), static_cast<std::size_t>((m - 1) + (m + k - 2) + post));
      ASSERT_GE(post, stragglar_round_lower_bound(n, k)) << "n=" << n << " k=" << k;
      EXPECT_EQ(v.summary.max_sends_per_rank_round, 1);
      EXPECT_EQ(v.summary.max_receives_per_rank_round, 1);
    }
  }
}

TEST(StragglarK, FoldInSendsEachLateRanksChunksInOrderAndOnlyTheLastOneExchanges) {
  const int n = 10, k = 3, m = n - k;
  const Schedule s = generate("stragglar", n, with_k(k));
  std::vector<std::vector<int>> sent(static_cast<std::size_t>(n));  // chunk order per late rank
  int exchanges = 0;
  for (const Round& r : s.rounds) {
    for (const Transfer& t : r.transfers) {
      if (r.phase == "reduce-scatter") {
        EXPECT_LT(t.src, m);
        EXPECT_LT(t.dst, m);
      }
      if (r.phase == "fold-in") {
        EXPECT_GE(t.src, m);
        EXPECT_LT(t.src, n - 1);          // the last late rank does not fold in
        EXPECT_EQ(t.dst, t.chunk_begin);  // into the chunk's owner
        EXPECT_EQ(t.op, Op::reduce);
        sent[static_cast<std::size_t>(t.src)].push_back(t.chunk_begin);
      }
      if (t.op == Op::reduce && r.phase != "reduce-scatter" && r.phase != "fold-in") {
        EXPECT_TRUE(t.src == n - 1 || t.dst == n - 1);
        ++exchanges;
      }
    }
  }
  for (int j = m; j < n - 1; ++j) {
    std::vector<int> all(static_cast<std::size_t>(m));
    for (int c = 0; c < m; ++c) all[static_cast<std::size_t>(c)] = c;
    EXPECT_EQ(sent[static_cast<std::size_t>(j)], all) << "late rank " << j;
  }
  EXPECT_EQ(exchanges, 2 * m);
}

TEST(StragglarK, LateOptionPlacesTheLateRanksInArrivalOrder) {
  Options o = with_k(3);
  o.set("late", "5,1,3");
  const Schedule s = generate("stragglar", 9, o);
  EXPECT_TRUE(verify(s).ok());
  EXPECT_EQ(s.late, (std::vector<int>{5, 1, 3}));
  EXPECT_EQ(s.straggler, 3);
  // Rank 5 arrives first of the three: it is the one folding in first.
  const Round* first_fold = nullptr;
  for (const Round& r : s.rounds) {
    if (r.phase == "fold-in") {
      first_fold = &r;
      break;
    }
  }
  ASSERT_NE(first_fold, nullptr);
  ASSERT_EQ(first_fold->transfers.size(), 1u);
  EXPECT_EQ(first_fold->transfers[0].src, 5);
  // One late rank named by late= is the straggler option.
  Options one;
  one.set("late", "4");
  EXPECT_EQ(generate("stragglar", 8, one).straggler, 4);
  EXPECT_TRUE(generate("stragglar", 8, one).late.empty());
}

TEST(StragglarK, OneLateRankIsTheOriginalSchedule) {
  for (int n : {5, 8, 12, 33}) {
    const Schedule one = generate("stragglar", n, with_k(1)),
                   plain = generate("stragglar", n, Options{});
    EXPECT_EQ(one.rounds, plain.rounds) << n;  // the options metadata differs, nothing else
    EXPECT_EQ(one.straggler, plain.straggler);
    EXPECT_TRUE(one.late.empty());
    EXPECT_EQ(stragglar_rounds(n, 1), stragglar_rounds(n));
    EXPECT_EQ(stragglar_round_lower_bound(n, 1), stragglar_round_lower_bound(n));
  }
}

// n = 4, k = 2 by hand: early ranks 0 and 1 (chunks 0 and 1), late ranks 2 then 3.
//   reduce-scatter  0 <-> 1
//   fold-in         2 -> 0 chunk 0;  2 -> 1 chunk 1
//   after rank 3    3 <-> 0 chunk 0;  3 <-> 1 chunk 1 and 0 -> 2 chunk 0;  then one round
//                   in which 0, 1 and 2 each receive their missing chunk: 3 rounds, the bound
//                   4-2-1+ceil(log2 4).
// With alpha = 1, beta = gamma = 0 and everyone at 0: 1 + 2 (the fold waits for phase 1 on
// rank 0, then rank 1 waits for rank 2's port) + 3 = ... rank 0's exchange starts at 2, so 5.
// With rank 3 arriving at 10: the fold is hidden and 3 rounds remain after it: 13.
TEST(StragglarK, HandDerivedFourRanksTwoLate) {
  const Schedule s = generate("stragglar", 4, with_k(2));
  ASSERT_TRUE(verify(s).ok());
  EXPECT_EQ(stragglar_rounds(4, 2), 3);
  EXPECT_EQ(stragglar_round_lower_bound(4, 2), 3);
  const CostParams alpha{.alpha = 1, .beta = 0, .gamma = 0};
  EXPECT_DOUBLE_EQ(schedule_cost(s, 1024, alpha), 5.0);
  EXPECT_DOUBLE_EQ(find_algorithm("stragglar").cost(4, 1024, alpha, with_k(2)), 5.0);
  const std::vector<double> late_last = {0, 0, 0, 10};
  EXPECT_DOUBLE_EQ(schedule_cost(s, 1024, alpha, late_last), 13.0);
  EXPECT_DOUBLE_EQ(testing::evaluate_rounds(s, 1024, alpha, late_last).makespan, 13.0);
  // Bandwidth only: chunks of 512 bytes, 1 s per byte; rank 3 at 1e5 -> 3 chunk times after.
  const CostParams beta{.alpha = 0, .beta = 1, .gamma = 0};
  EXPECT_DOUBLE_EQ(schedule_cost(s, 1024, beta, std::vector<double>{0, 0, 0, 1e5}), 1e5 + 3 * 512);
}

TEST(StragglarK, ScheduleCostMatchesTheRoundEvaluationForEveryAlgorithm) {
  const CostParams p{.alpha = 3e-6, .beta = 1.0 / 450e9, .gamma = 1e-12};
  for (const AlgorithmInfo& a : algorithms()) {
    if (a.in_network) {  // switch reductions: nvls_test checks nvls's closed form
      EXPECT_THROW(schedule_cost(generate(a.name, 4, Options{}), 1 << 24, p), InputError) << a.name;
      continue;
    }
    for (int n : {4, 7, 8}) {
      const Schedule s = generate(a.name, n, Options{});
      EXPECT_NEAR(schedule_cost(s, 1 << 24, p), testing::evaluate_rounds(s, 1 << 24, p).makespan,
                  1e-12)
          << a.name << " n=" << n;
      EXPECT_NEAR(schedule_cost(s, 1 << 24, p), a.cost(n, 1 << 24, p, Options{}), 1e-9)
          << a.name << " n=" << n;
    }
  }
}

TEST(StragglarK, BadOptionsAreInputErrorsThatSayWhy) {
  auto message = [](int n, std::vector<std::pair<std::string, std::string>> kv) {
    Options o;
    for (auto& [k, v] : kv) o.set(k, v);
    try {
      generate("stragglar", n, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(8, {{"stragglers", "0"}}).find("must be in [1"), std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "-2"}}).find("must be in [1"), std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "7"}}).find("at most n-2 = 6 late ranks"),
            std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "8"}}).find("at most n-2 = 6"), std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "two"}}).find("expected an integer"), std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "2"}, {"straggler", "3"}}).find("late=a,b"),
            std::string::npos);
  EXPECT_NE(
      message(8, {{"stragglers", "2"}, {"late", "1,2,3"}}).find("lists 3 ranks but stragglers=2"),
      std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "2"}, {"late", "1,1"}}).find("listed twice"),
            std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "2"}, {"late", "1,8"}}).find("must be in [0, 7]"),
            std::string::npos);
  EXPECT_NE(message(8, {{"stragglers", "2"}, {"late", "1,"}}).find("expected an integer"),
            std::string::npos);
  EXPECT_NE(message(8, {{"late", "3"}, {"straggler", "4"}}).find("different ranks"),
            std::string::npos);
  EXPECT_THROW(stragglar_rounds(8, 7), InputError);
  EXPECT_THROW(stragglar_phase2(8, 0), InputError);
}

}  // namespace
}  // namespace ssim::alg
