// The topology-aware schedules hierarchical and stragglar_hier: correctness through the
// verifier for many (nodes, gpus_per_node) shapes, their round structure, hierarchical's closed
// form against the generated schedule, stragglar_hier against a hand-derived case, and bad
// gpus_per_node values.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"
#include "round_timing.hpp"

namespace ssim::alg {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Options opts(std::initializer_list<std::pair<const char*, std::string>> kv) {
  Options o;
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

struct Shape {
  int nodes, g;
};

std::vector<Shape> shapes(int min_g) {
  std::vector<Shape> v;
  for (int nodes = 1; nodes <= 7; ++nodes) {
    for (int g = min_g; g <= 9; ++g) {
      if (nodes * g >= 2) v.push_back({nodes, g});
    }
  }
  for (Shape s : {Shape{4, 8}, Shape{8, 8}, Shape{16, 4}, Shape{3, 16}}) v.push_back(s);
  return v;
}

std::string label(const Shape& s) { return std::to_string(s.nodes) + "x" + std::to_string(s.g); }

int sends_of(const Round& r, int rank) {
  return static_cast<int>(std::count_if(r.transfers.begin(), r.transfers.end(),
                                        [&](const Transfer& t) { return t.src == rank; }));
}

TEST(Hierarchical, VerifiesForManyShapesAndInterAlgorithms) {
  for (const char* inter : {"ring", "rhd", "halving_doubling"}) {
    for (const Shape& sh : shapes(1)) {
      const int n = sh.nodes * sh.g;
      const Options o = opts({{"gpus_per_node", std::to_string(sh.g)}, {"inter", inter}});
      const Schedule s = generate("hierarchical", n, o);
      const std::string what = std::string(inter) + " " + label(sh);
      const VerifyResult v = verify(s);
      ASSERT_TRUE(v.ok()) << what << ": " << v.error->to_string();
      EXPECT_EQ(v.summary.max_sends_per_rank_round, 1) << what;
      EXPECT_EQ(v.summary.max_receives_per_rank_round, 1) << what;
      // Intra rounds stay in a node, inter rounds on a rail.
      for (const Round& r : s.rounds) {
        for (const Transfer& t : r.transfers) {
          if (r.phase.rfind("inter-", 0) == 0) {
            EXPECT_EQ(t.src % sh.g, t.dst % sh.g) << what << " " << r.phase;
          } else {
            EXPECT_EQ(t.src / sh.g, t.dst / sh.g) << what << " " << r.phase;
          }
        }
      }
      const int inter_rounds =
          sh.nodes >= 2 ? static_cast<int>(generate(inter, sh.nodes, Options{}).rounds.size()) : 0;
      EXPECT_EQ(static_cast<int>(s.rounds.size()), 2 * (sh.g - 1) + inter_rounds) << what;
    }
  }
}

TEST(Hierarchical, OneNodeIsRing) {
  for (int n : {2, 5, 8}) {
    Schedule h = generate("hierarchical", n, Options{});
    const Schedule ring = generate("ring", n, Options{});
    EXPECT_EQ(h.rounds, ring.rounds) << n;
    EXPECT_EQ(h.chunks, ring.chunks) << n;
  }
}

TEST(Hierarchical, ClosedFormMatchesTheSchedule) {
  const std::vector<CostParams> params = {{3e-6, 1.0 / (450.0 * kGiB), 0.0},
                                          {3e-6, 1.0 / (450.0 * kGiB), 1.0 / (450.0 * kGiB)},
                                          {1e-6, 1e-12, 3e-13}};
  const AlgorithmInfo& info = find_algorithm("hierarchical");
  for (const char* inter : {"ring", "rhd", "halving_doubling"}) {
    for (const Shape& sh : shapes(1)) {
      const int n = sh.nodes * sh.g;
      const Options o = opts({{"gpus_per_node", std::to_string(sh.g)}, {"inter", inter}});
      const Schedule s = generate("hierarchical", n, o);
      for (double per_chunk : {1024.0, 3.0 * 1024 * 1024}) {
        const double bytes = per_chunk * s.chunks;
        for (const CostParams& p : params) {
          const double expect = info.cost(n, bytes, p, o);
          const double got = testing::evaluate_rounds(s, bytes, p).makespan;
          EXPECT_NEAR(got, expect, 1e-9 * expect)
              << inter << " " << label(sh) << " bytes=" << bytes;
        }
      }
    }
  }
  // 4 nodes x 8, ring across: 7 (alpha + s/8 beta) twice, plus ring among 4 of s/8.
  const CostParams p{2e-6, 1e-10, 0};
  const double s = 32.0 * 1024 * 1024;
  const double expect = 14 * (2e-6 + s / 8 * 1e-10) + 6 * (2e-6 + s / 32 * 1e-10);
  EXPECT_NEAR(info.cost(32, s, p, opts({{"gpus_per_node", "8"}})), expect, 1e-12);
}

// The size bounds (registry.hpp) hold for every shape, not only the default one node.
TEST(Hierarchical, SizeBoundsHoldForEveryShape) {
  for (const char* name : {"hierarchical", "stragglar_hier"}) {
    const AlgorithmInfo& info = find_algorithm(name);
    for (const Shape& sh : shapes(2)) {
      const int n = sh.nodes * sh.g;
      const Options o = opts({{"gpus_per_node", std::to_string(sh.g)}});
      const Schedule s = generate(name, n, o);
      const ScheduleSize b = info.size(n, o);
      const std::string what = std::string(name) + " " + label(sh);
      EXPECT_LE(s.chunks, b.chunks) << what;
      EXPECT_LE(static_cast<double>(s.rounds.size()), b.rounds) << what;
      EXPECT_LE(static_cast<double>(s.transfer_count()), b.transfers) << what;
      EXPECT_LE(b.transfers, 8.0 * static_cast<double>(s.transfer_count()) + 64) << what;
      std::size_t largest = 0;
      std::set<std::pair<int, int>> pairs;
      for (const Round& r : s.rounds) {
        largest = std::max(largest, r.transfers.size());
        for (const Transfer& t : r.transfers) pairs.insert({t.src, t.dst});
      }
      EXPECT_LE(static_cast<double>(largest), b.largest_round) << what;
      EXPECT_LE(static_cast<double>(pairs.size()), b.pairs) << what;
    }
  }
}

TEST(Hierarchical, BadGpusPerNodeIsAClearError) {
  auto message = [](const char* algorithm, int n, const Options& o) {
    try {
      generate(algorithm, n, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const char* a : {"hierarchical", "stragglar_hier"}) {
    EXPECT_NE(message(a, 8, opts({{"gpus_per_node", "3"}})).find("must divide the rank count 8"),
              std::string::npos)
        << a;
    EXPECT_NE(message(a, 8, opts({{"gpus_per_node", "0"}})).find("gpus_per_node=0"),
              std::string::npos)
        << a;
    EXPECT_NE(message(a, 8, opts({{"gpus_per_node", "16"}})).find("gpus_per_node=16"),
              std::string::npos)
        << a;
    EXPECT_NE(message(a, 8, opts({{"gpus_per_node", "x"}})).find("integer"), std::string::npos)
        << a;
  }
  EXPECT_NE(message("stragglar_hier", 8, opts({{"gpus_per_node", "1"}})).find("must be 2..8"),
            std::string::npos);
  EXPECT_NE(message("hierarchical", 8, opts({{"inter", "tree"}})).find("inter=tree"),
            std::string::npos);
}

// stragglar_hier: every shape, straggler positions across nodes, a few segment counts.
TEST(StragglarHier, VerifiesForEveryShapeAndStraggler) {
  for (const Shape& sh : shapes(2)) {
    const int n = sh.nodes * sh.g;
    std::vector<int> stragglers;
    if (n <= 24) {
      for (int r = 0; r < n; ++r) stragglers.push_back(r);
    } else {
      stragglers = {0, n - 1, sh.g - 1, n / 2, sh.g + 1};
    }
    for (int segments : {1, 2, 4}) {
      for (int straggler : stragglers) {
        const Options o = opts({{"gpus_per_node", std::to_string(sh.g)},
                                {"straggler", std::to_string(straggler)},
                                {"segments", std::to_string(segments)}});
        const Schedule s = generate("stragglar_hier", n, o);
        const std::string what =
            label(sh) + " s=" + std::to_string(straggler) + " segments=" + std::to_string(segments);
        const VerifyResult v = verify(s);
        ASSERT_TRUE(v.ok()) << what << ": " << v.error->to_string();
        ASSERT_EQ(s.straggler, straggler);
        // Nothing before the exchanges involves the straggler; it only talks to its node
        // and its own rail; every other rank sends at most once per round except the proxy
        // (two rails) in the inter phase.
        const int q = straggler / sh.g * sh.g + (straggler % sh.g + sh.g - 1) % sh.g;
        bool phase2 = false;
        for (const Round& r : s.rounds) {
          phase2 = phase2 || r.phase == "straggler-exchange";
          for (const Transfer& t : r.transfers) {
            if (!phase2) {
              EXPECT_TRUE(t.src != straggler && t.dst != straggler) << what << " " << r.phase;
            }
            if (t.src == straggler || t.dst == straggler) {
              const int other = t.src == straggler ? t.dst : t.src;
              EXPECT_TRUE(other / sh.g == straggler / sh.g || other % sh.g == straggler % sh.g)
                  << what;
            }
          }
          for (int rank = 0; rank < n; ++rank) {
            // q serves two rails in the inter phase; s and its node-mates exchange and feed
            // their rail's chain in the same round.
            const bool two = (rank == q && r.phase.rfind("inter-", 0) == 0) ||
                             (rank / sh.g == straggler / sh.g && r.phase == "straggler-exchange");
            EXPECT_LE(sends_of(r, rank), two ? 2 : 1) << what << " " << r.phase;
          }
        }
        // Phase 1, then the exchanges (G per part) with the chains overlapping them, then
        // the allgather; the chains end at most B + 2N rounds after the exchanges.
        const int phase1 =
            sh.g == 2 && sh.nodes == 1 ? 0 : sh.g - 1 + (sh.nodes >= 2 ? 2 * (sh.nodes - 1) : 0);
        const int parts = sh.nodes >= 2 && sh.nodes * segments % 2 == 0 ? 2 : 1;
        const int lo = phase1 + sh.g * parts + sh.g - 1;
        const int rounds = static_cast<int>(s.rounds.size());
        EXPECT_GE(rounds, lo) << what;
        EXPECT_LE(rounds, lo + sh.nodes * segments + 2 * sh.nodes) << what;
      }
    }
  }
}

// Hand-derived: 2 nodes x 2 GPUs, straggler 3 (proxy 2), segments 1: pieces of 2 chunks of c
// bytes (piece 0 = chunks 0-1, piece 1 = chunks 2-3), exchanged in 2 parts of one chunk;
// tau = alpha + c beta, T = alpha + 2c beta, gamma 0. Ranks 0-2 finish phase 1 long before s
// arrives at D. Phase 2 (3 and 2 exchange chunk 2, 0, 3, 1 in rounds 0-3; 3 -> 1 sends chunk 2
// in round 1 and 3 in round 3, 2 -> 0 chunk 0 in round 2 and 1 in round 4; a rank's sends in a
// round go one after the other, the exchange first):
//   R0 3<->2 D+tau.  R1 3<->2 D+2tau, 3->1 D+3tau.  R2 3<->2 from D+3tau: D+4tau, 2->0 D+5tau.
//   R3 3<->2 from D+5tau: D+6tau, 3->1 D+7tau.  R4 2->0 D+7tau.
//   allgather in each node (pieces of 2c): D + 7 tau + T = D + 8 alpha + 9 c beta.
TEST(StragglarHier, HandDerivedTwoByTwo) {
  const Options o = opts({{"gpus_per_node", "2"}, {"segments", "1"}});
  const Schedule s = generate("stragglar_hier", 4, o);
  ASSERT_EQ(s.chunks, 4);
  const CostParams p{2e-6, 1e-9, 0};
  const double c = 1e6, bytes = 4 * c;
  const double D = 1.0;
  const testing::Timing late = testing::evaluate_rounds(s, bytes, p, {0, 0, 0, D});
  EXPECT_NEAR(late.makespan, D + 8 * p.alpha + 9 * c * p.beta, 1e-12);
  // The registry's cost is the schedule's (all at 0).
  const testing::Timing now = testing::evaluate_rounds(s, bytes, p);
  EXPECT_NEAR(find_algorithm("stragglar_hier").cost(4, bytes, p, o), now.makespan, 1e-12);
}

}  // namespace
}  // namespace ssim::alg

namespace ssim::alg {
namespace {

// What AlgorithmInfo::one_node_equals claims (advise leaves such an algorithm out on one node):
// on one node the schedule is the named algorithm's, round for round and transfer for transfer
// (phase names and metadata aside).
Schedule comparable(Schedule s) {
  s.algorithm.clear();
  s.options.clear();
  for (Round& r : s.rounds) r.phase.clear();
  return s;
}

TEST(OneNodeEquals, TheScheduleIsTheNamedAlgorithmsOnOneNode) {
  int claims = 0;
  for (const AlgorithmInfo& info : algorithms()) {
    if (info.one_node_equals.empty()) continue;
    ++claims;
    for (int n : {2, 3, 4, 7, 8, 16}) {
      SCOPED_TRACE(info.name + " n=" + std::to_string(n));
      const Schedule own = comparable(generate(info.name, n, Options{}));
      const Schedule other = comparable(generate(info.one_node_equals, n, Options{}));
      EXPECT_EQ(own.chunks, other.chunks);
      EXPECT_EQ(own.rounds.size(), other.rounds.size());
      EXPECT_TRUE(own == other);
      // With two nodes it is a different schedule (the claim is about one node only).
      if (n % 2 == 0 && n >= 4) {
        Options two;
        two.set("gpus_per_node", std::to_string(n / 2));
        EXPECT_FALSE(comparable(generate(info.name, n, two)) == other);
      }
    }
  }
  EXPECT_EQ(claims, 3);  // hierarchical = ring, nvls_tree = nvls, collnet_direct = collnet
}

}  // namespace
}  // namespace ssim::alg
