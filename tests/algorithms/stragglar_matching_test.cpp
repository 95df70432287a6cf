// StragglAR's receivers -> chunks matching (algorithms/stragglar_matching.hpp) against a plain
// recursive augmenting-path search: the same chunk for every receiver and the same answer of
// every add(), on random rounds shaped like the doubling construction's (most receivers
// allowed the whole window, some a prefix of it, some one chunk) and on arbitrary ones.
#include "algorithms/stragglar_matching.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "common/random.hpp"

namespace ssim::alg::detail {
namespace {

// The search written the obvious way: newest unvisited allowed chunk first; a full chunk is
// taken over from its first holder (in slot order) that finds another chunk.
class ReferenceMatching {
 public:
  ReferenceMatching(int ranks, int base, const std::vector<std::uint64_t>& allowed,
                    const std::vector<int>& capacity)
      : base_(base),
        allowed_(allowed),
        capacity_(capacity),
        holders_(capacity.size()),
        assigned_(static_cast<std::size_t>(ranks), -1) {}

  bool add(int r) {
    seen_ = 0;
    return augment(r);
  }
  int assigned(int r) const { return assigned_[static_cast<std::size_t>(r)]; }

 private:
  bool augment(int r) {
    for (std::uint64_t open = allowed_[static_cast<std::size_t>(r)] & ~seen_; open != 0;
         open = allowed_[static_cast<std::size_t>(r)] & ~seen_) {
      const int i = 63 - std::countl_zero(open);
      seen_ |= std::uint64_t{1} << i;
      std::vector<int>& holders = holders_[static_cast<std::size_t>(i)];
      if (static_cast<int>(holders.size()) < capacity_[static_cast<std::size_t>(i)]) {
        holders.push_back(r);
        assigned_[static_cast<std::size_t>(r)] = base_ + i;
        return true;
      }
      for (int& holder : holders) {
        if (augment(holder)) {
          holder = r;
          assigned_[static_cast<std::size_t>(r)] = base_ + i;
          return true;
        }
      }
    }
    return false;
  }

  int base_;
  std::vector<std::uint64_t> allowed_;
  std::vector<int> capacity_;
  std::vector<std::vector<int>> holders_;
  std::vector<int> assigned_;
  std::uint64_t seen_ = 0;
};

std::uint64_t span(int low, int high) {
  const std::uint64_t upto = high >= 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << high) - 1;
  return upto & ~((std::uint64_t{1} << low) - 1);
}

// One random round: `window` chunks, `ranks` receivers, capacities summing to about
// `ranks` (a fraction `fill` of it); masks by `shape` (0: like the doubling construction, 1:
// arbitrary subsets). Receivers in the construction's order (fewest allowed chunks first)
// or, with `shuffled`, in random order. Compares every add() and the final matching.
void compare_round(ChunkMatching& fast, SplitMix64& rng, int ranks, int window, int base,
                   double fill, int shape, bool shuffled, const std::string& where) {
  std::vector<int> capacity(static_cast<std::size_t>(window), 0);
  const int total = std::max(1, static_cast<int>(fill * ranks));
  for (int k = 0; k < total; ++k) {
    // Younger chunks get fewer senders, as in the doubling construction (roughly halving).
    int c = window - 1;
    while (c > 0 && rng.next() % 2 == 0) --c;
    ++capacity[static_cast<std::size_t>(c)];
  }
  if (window > 2 && rng.next() % 4 == 0) capacity[rng.next() % window] = 0;  // a chunk nobody sends
  std::vector<std::uint64_t> allowed(static_cast<std::size_t>(ranks), 0);
  for (int r = 0; r < ranks; ++r) {
    std::uint64_t m = 0;
    const std::uint64_t kind = rng.next() % 20;
    if (shape == 1) {
      m = rng.next() & span(0, window - 1);
    } else if (kind < 14) {
      m = span(0, window - 1);  // the whole window
    } else if (kind < 17) {
      m = span(0, static_cast<int>(rng.next() % window));  // a prefix (critical window)
    } else if (kind < 19) {
      m = std::uint64_t{1} << (rng.next() % window);  // one chunk (a double's spare)
    } else {
      const int lo = static_cast<int>(rng.next() % window);
      m = span(lo, lo + static_cast<int>(rng.next() % (window - lo)));
    }
    allowed[static_cast<std::size_t>(r)] = m;
  }
  std::vector<int> order(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) order[static_cast<std::size_t>(r)] = r;
  if (shuffled) {
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return std::popcount(allowed[static_cast<std::size_t>(a)]) <
             std::popcount(allowed[static_cast<std::size_t>(b)]);
    });
  }

  ReferenceMatching ref(ranks, base, allowed, capacity);
  fast.reset(ranks, base);
  for (int c = 0; c < window; ++c)
    fast.set_capacity(base + c, capacity[static_cast<std::size_t>(c)]);
  for (int r = 0; r < ranks; ++r) {
    fast.allow(r, allowed[static_cast<std::size_t>(r)]);
    ASSERT_EQ(fast.allowed_count(r), std::popcount(allowed[static_cast<std::size_t>(r)]));
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int r = order[k];
    ASSERT_EQ(fast.add(r), ref.add(r)) << where << ": add #" << k << " (rank " << r << ")";
  }
  fast.finish();
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(fast.assigned(r), ref.assigned(r)) << where << ": rank " << r;
  }
}

TEST(StragglarMatching, EqualsPlainAugmentingPathSearch) {
  SplitMix64 rng(2024);
  ChunkMatching fast;  // reused across rounds, as the construction does
  for (int trial = 0; trial < 3000; ++trial) {
    const int window = 1 + static_cast<int>(rng.next() % 14);
    const int ranks = 1 + static_cast<int>(rng.next() % 300);
    const int base = static_cast<int>(rng.next() % 1000);
    const double fill = 0.2 + 0.3 * static_cast<double>(rng.next() % 5);  // 0.2 .. 1.4
    const int shape = trial % 5 == 4 ? 1 : 0;
    const bool shuffled = trial % 3 == 2;
    compare_round(fast, rng, ranks, window, base, fill, shape, shuffled,
                  "trial " + std::to_string(trial));
    if (testing::Test::HasFatalFailure()) return;
  }
}

// The widest window (64 chunks): the masks' top bit and the shifts at 63.
TEST(StragglarMatching, FullWidthWindow) {
  SplitMix64 rng(7);
  ChunkMatching fast;
  for (int trial = 0; trial < 200; ++trial) {
    compare_round(fast, rng, 50 + static_cast<int>(rng.next() % 400), 64, 3, 0.9, trial % 2, false,
                  "trial " + std::to_string(trial));
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(StragglarMatching, Popcount) {
  SplitMix64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t x = rng.next() & rng.next();
    EXPECT_EQ(popcount64(x), std::popcount(x)) << x;
  }
}

}  // namespace
}  // namespace ssim::alg::detail
