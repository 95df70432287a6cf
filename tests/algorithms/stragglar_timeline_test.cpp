#include "algorithms/stragglar_timeline.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/stragglar.hpp"
#include "algorithms/verifier.hpp"
#include "common/bits.hpp"
#include "stragglar_checks.hpp"

namespace ssim::alg {
namespace {

// Replays a Phase2Timeline on its own terms (not through the generator): exchanges S <-> r in
// round r < m, the cyclic copies, then the endgame; checks ports, holdings and completion
// and the construction's shape. Returns the round count, or -1 after a failed expectation.
int replay(const Phase2Timeline& p) {
  const int n = p.n, m = n - 1, S = m, A = p.ages;
  int M = 0;
  while ((1 << M) < m) ++M;
  // Profile of copies per age: 1, 2, ..., 2^(M-3), then 1, m/4-1, m/4, m/4.
  EXPECT_EQ(A, M + 2);
  for (int k = 1; k <= A; ++k) {
    const std::size_t want = k <= M - 2   ? std::size_t{1} << (k - 1)
                             : k == M - 1 ? 1
                             : k == M     ? static_cast<std::size_t>(m / 4 - 1)
                                          : static_cast<std::size_t>(m / 4);
    EXPECT_EQ(p.send[static_cast<std::size_t>(k)].size(), want) << "n=" << n << " age " << k;
    EXPECT_EQ(p.recv[static_cast<std::size_t>(k)].size(), want) << "n=" << n << " age " << k;
  }
  std::vector<std::vector<char>> has(static_cast<std::size_t>(m),
                                     std::vector<char>(static_cast<std::size_t>(m), 0));
  std::vector<int> holders(static_cast<std::size_t>(m), 0);
  const int rounds = m + static_cast<int>(p.endgame.size());
  for (int t = 0; t < rounds; ++t) {
    std::vector<char> sent(static_cast<std::size_t>(n), 0), got(static_cast<std::size_t>(n), 0);
    std::vector<std::pair<int, int>> delivered;
    auto copy = [&](int src, int dst, int c) {
      const bool held =
          src == S ? t >= m : has[static_cast<std::size_t>(src)][static_cast<std::size_t>(c)] != 0;
      if (!held || sent[static_cast<std::size_t>(src)] || got[static_cast<std::size_t>(dst)] ||
          dst == S || has[static_cast<std::size_t>(dst)][static_cast<std::size_t>(c)]) {
        ADD_FAILURE() << "n=" << n << " round " << t << ": bad copy " << src << "->" << dst
                      << " chunk " << c;
        return false;
      }
      sent[static_cast<std::size_t>(src)] = got[static_cast<std::size_t>(dst)] = 1;
      delivered.emplace_back(dst, c);
      return true;
    };
    if (t < m) {
      sent[static_cast<std::size_t>(t)] = got[static_cast<std::size_t>(t)] = 1;
      sent[static_cast<std::size_t>(S)] = got[static_cast<std::size_t>(S)] = 1;
      for (int k = 1; k <= A && k <= t; ++k) {
        const int c = t - k;
        const auto& snd = p.send[static_cast<std::size_t>(k)];
        const auto& rcv = p.recv[static_cast<std::size_t>(k)];
        for (std::size_t i = 0; i < snd.size(); ++i) {
          if (!copy((c + snd[i]) % m, (c + rcv[i]) % m, c)) return -1;
        }
      }
      // From round A on (the pattern in full) every free rank sends and receives once.
      if (t > A) {
        for (int r = 0; r < m; ++r) {
          EXPECT_TRUE(sent[static_cast<std::size_t>(r)] && got[static_cast<std::size_t>(r)])
              << "n=" << n << " round " << t << " rank " << r;
        }
      }
    } else {
      for (const auto& [src, dst, c] : p.endgame[static_cast<std::size_t>(t - m)]) {
        if (!copy(src, dst, c)) return -1;
      }
    }
    if (t < m) delivered.emplace_back(t, t);
    for (const auto& [dst, c] : delivered) {
      has[static_cast<std::size_t>(dst)][static_cast<std::size_t>(c)] = 1;
      ++holders[static_cast<std::size_t>(c)];
    }
    // Chunk c is complete A rounds after its release (at the start of round c+A+1).
    for (int c = 0; c < m && t < m; ++c) {
      if (t == c + A) {
        EXPECT_EQ(holders[static_cast<std::size_t>(c)], m) << "n=" << n << " chunk " << c;
      }
    }
  }
  for (int c = 0; c < m; ++c) {
    EXPECT_EQ(holders[static_cast<std::size_t>(c)], m) << "n=" << n << " chunk " << c;
    if (holders[static_cast<std::size_t>(c)] != m) return -1;
  }
  return rounds;
}

// n = 2^M + 1: the construction meets the lower bound n-2+ceil(log2 n) = m+M for every M tried.
TEST(StragglarTimeline, MeetsTheBoundAtTwoToTheMPlusOne) {
  for (int M = 4; M <= 11; ++M) {
    const int n = (1 << M) + 1;
    const auto p = stragglar_timeline(n);
    ASSERT_TRUE(p.has_value()) << "n=" << n;
    EXPECT_EQ(p->endgame.size(), static_cast<std::size_t>(M)) << n;
    EXPECT_EQ(replay(*p), n - 2 + ceil_log2(n)) << n;
  }
}

TEST(StragglarTimeline, OnlyForTwoToTheMPlusOne) {
  for (int n : {3, 5, 9, 16, 18, 32, 34, 1024, 1026})
    EXPECT_FALSE(stragglar_timeline(n).has_value()) << n;
}

TEST(StragglarTimeline, Deterministic) {
  const auto a = stragglar_timeline(257), b = stragglar_timeline(257);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->send, b->send);
  EXPECT_EQ(a->recv, b->recv);
  EXPECT_EQ(a->endgame, b->endgame);
}

// The generator uses it where the doubling construction misses the bound: n = 1025 and 2049
// (1039 and 2064 rounds before), verified with the straggler at both ends and inside.
TEST(StragglarTimeline, GeneratorMeetsTheBoundAt1025And2049) {
  EXPECT_EQ(stragglar_rounds(1025), 1034);
  EXPECT_EQ(stragglar_rounds(2049), 2059);
  expect_stragglar_verified(1025, {0, 500, 1024}, 1034);
  expect_stragglar_verified(2049, {2048}, 2059);
}

}  // namespace
}  // namespace ssim::alg
