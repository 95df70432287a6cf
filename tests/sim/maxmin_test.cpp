#include "sim/maxmin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "tests/sim/fixtures.hpp"

namespace ssim::sim {
namespace {

using Links = std::vector<int>;
using testing::expect_rates;

TEST(MaxMin, EqualSharingOnOneLink) {
  // Three flows on one link of 12: each unfrozen flow grows to 12 / 3 = 4 when the link fills.
  expect_rates({12}, {{{0}}, {{0}}, {{0}}}, {4, 4, 4});
}

TEST(MaxMin, ThreeFlowsOnTwoLinks) {
  // Links A = 10, B = 4. f0 crosses A and B, f1 only A, f2 only B.
  // Fair shares when everyone grows together: A 10/2 = 5, B 4/2 = 2. B fills first at level 2,
  // freezing f0 = f2 = 2. A keeps 10 - 2 = 8 for its one unfrozen flow: f1 = 8.
  expect_rates({10, 4}, {{{0, 1}}, {{0}}, {{1}}}, {2, 8, 2});
}

TEST(MaxMin, ParkingLotWithTwoLevels) {
  // L1 = 1, L2 = 2. f0 crosses both, f1 on L1, f2 and f3 on L2.
  // Shares: L1 1/2, L2 2/3. L1 fills at 1/2: f0 = f1 = 0.5. L2 keeps 2 - 0.5 = 1.5 for f2 and
  // f3: 0.75 each.
  expect_rates({1, 2}, {{{0, 1}}, {{0}}, {{1}}, {{1}}}, {0.5, 0.5, 0.75, 0.75});
}

TEST(MaxMin, CappedFlowLeavesItsShareToOthers) {
  // One link of 10, f0 capped at 2. Level 10/3 = 3.33 exceeds the cap, so f0 freezes at 2 first;
  // the other two share 10 - 2 = 8: 4 each.
  expect_rates({10}, {{{0}, 2}, {{0}}, {{0}}}, {2, 4, 4});
}

TEST(MaxMin, CapAboveTheFairShareDoesNotBind) {
  // One link of 12, three flows, one capped at 5 > 12/3: all get 4.
  expect_rates({12}, {{{0}, 5}, {{0}}, {{0}}}, {4, 4, 4});
}

TEST(MaxMin, SolveAroundTouchesOnlyTheComponent) {
  // Link X = 8 carries a, link Y = 6 carries b: separate components.
  MaxMinSolver s;
  const int X = s.add_link(8), Y = s.add_link(6);
  const int a = s.add_flow(Links{X});
  const int b = s.add_flow(Links{Y});
  std::vector<int> changed;
  s.solve_around(Links{X, Y}, changed);
  EXPECT_EQ(changed, (std::vector<int>{a, b}));  // 0 -> 8 and 0 -> 6
  EXPECT_DOUBLE_EQ(s.rate(a), 8);
  EXPECT_DOUBLE_EQ(s.rate(b), 6);

  // c joins X: a and c share 8 (4 each); b's component is not visited.
  const int c = s.add_flow(Links{X});
  changed.clear();
  s.solve_around(Links{X}, changed);
  EXPECT_EQ(changed, (std::vector<int>{a, c}));
  EXPECT_DOUBLE_EQ(s.rate(a), 4);
  EXPECT_DOUBLE_EQ(s.rate(c), 4);
  EXPECT_DOUBLE_EQ(s.rate(b), 6);

  // c leaves: a gets X back; only a changed.
  s.remove_flow(c);
  EXPECT_FALSE(s.active(c));
  changed.clear();
  s.solve_around(Links{X}, changed);
  EXPECT_EQ(changed, (std::vector<int>{a}));
  EXPECT_DOUBLE_EQ(s.rate(a), 8);

  // A flow d over X and Y merges the components. Shares: X = 8 over {a, d} is 4, Y = 6 over
  // {b, d} is 3, so Y fills first: b = d = 3; X keeps 8 - 3 = 5 for a.
  const int d = s.add_flow(Links{X, Y});
  EXPECT_EQ(d, c);  // the freed id is reused
  changed.clear();
  s.solve_around(Links{X}, changed);
  EXPECT_EQ(changed.size(), 3u);
  EXPECT_DOUBLE_EQ(s.rate(a), 5);
  EXPECT_DOUBLE_EQ(s.rate(d), 3);
  EXPECT_DOUBLE_EQ(s.rate(b), 3);
}

TEST(MaxMin, RemovalKeepsLinkListsConsistent) {
  MaxMinSolver s;
  const int l = s.add_link(9), m = s.add_link(3);
  const int f0 = s.add_flow(Links{l, m}), f1 = s.add_flow(Links{l}), f2 = s.add_flow(Links{m, l});
  s.remove_flow(f0);
  EXPECT_EQ(s.active_flows(), 2);
  std::vector<int> on_l = s.flows_on(l);
  std::sort(on_l.begin(), on_l.end());
  EXPECT_EQ(on_l, (std::vector<int>{f1, f2}));
  ASSERT_EQ(s.flows_on(m).size(), 1u);
  EXPECT_EQ(s.flows_on(m)[0], f2);
  // m = 3 holds f2 alone and fills first at 3; l keeps 9 - 3 = 6 for f1.
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(f1), 6);
  EXPECT_DOUBLE_EQ(s.rate(f2), 3);
  s.remove_flow(f2);
  s.remove_flow(f1);
  EXPECT_TRUE(s.flows_on(l).empty());
  EXPECT_TRUE(s.flows_on(m).empty());
}

// Long flows over shared links, removed in random order: every link's list holds exactly the
// active flows that cross it (the slot bookkeeping of the swap-removals), and rates stay right.
TEST(MaxMin, ManyRemovalsKeepLinkListsExact) {
  std::mt19937_64 rng(7);
  MaxMinSolver s;
  const int nl = 40;
  for (int l = 0; l < nl; ++l) s.add_link(1.0 + static_cast<double>(l % 5));
  std::vector<std::vector<int>> route(64);  // by flow id, while active
  std::vector<int> live;
  for (int step = 0; step < 400; ++step) {
    if (!live.empty() && (live.size() > 30 || rng() % 2 == 0)) {
      const std::size_t k = rng() % live.size();
      s.remove_flow(live[k]);
      route[static_cast<std::size_t>(live[k])].clear();
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      std::vector<int> links(static_cast<std::size_t>(nl));
      for (int l = 0; l < nl; ++l) links[static_cast<std::size_t>(l)] = l;
      std::shuffle(links.begin(), links.end(), rng);  // hops in any order
      links.resize(1 + rng() % nl);
      const int f = s.add_flow(links);
      route[static_cast<std::size_t>(f)] = links;
      live.push_back(f);
    }
    for (int l = 0; l < nl; ++l) {
      std::vector<int> on = s.flows_on(l), want;
      for (int f : live) {
        const std::vector<int>& r = route[static_cast<std::size_t>(f)];
        if (std::find(r.begin(), r.end(), l) != r.end()) want.push_back(f);
      }
      std::sort(on.begin(), on.end());
      std::sort(want.begin(), want.end());
      ASSERT_EQ(on, want) << "step " << step << " link " << l;
    }
  }
  // The survivors' rates: what a fresh solver gives the same flows.
  s.solve();
  MaxMinSolver fresh;
  for (int l = 0; l < nl; ++l) fresh.add_link(s.capacity(l));
  for (int f : live) fresh.add_flow(route[static_cast<std::size_t>(f)]);
  fresh.solve();
  ASSERT_FALSE(live.empty());
  for (std::size_t g = 0; g < live.size(); ++g) {  // the lists' orders differ: rounding may
    const double want = fresh.rate(static_cast<int>(g));
    EXPECT_NEAR(s.rate(live[g]), want, 1e-12 * want) << "flow " << live[g];
  }
}

TEST(MaxMin, RejectsALinkTwiceAndStaysUsable) {
  MaxMinSolver s;
  const int l = s.add_link(4), m = s.add_link(2);
  const int f0 = s.add_flow(Links{l});
  EXPECT_THROW(s.add_flow(Links{l, m, l}), InternalError);
  EXPECT_THROW(s.add_flow(Links{m, 7}), InternalError);
  EXPECT_EQ(s.active_flows(), 1);
  EXPECT_EQ(s.flows_on(l).size(), 1u);
  EXPECT_TRUE(s.flows_on(m).empty());
  const int f1 = s.add_flow(Links{m, l});  // the same links once each are fine
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(f0), 2);
  EXPECT_DOUBLE_EQ(s.rate(f1), 2);
}

// Random systems: incremental solves agree with a full solve, and the result is max-min fair
// (feasible, and every flow is at its cap or crosses a saturated link on which no flow is faster).
TEST(MaxMin, IncrementalAgreesWithFullSolveAndIsFair) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 20; ++trial) {
    MaxMinSolver inc, full;
    const int nl = 3 + static_cast<int>(rng() % 10);
    for (int l = 0; l < nl; ++l) {
      const double cap = 1.0 + static_cast<double>(rng() % 100);
      inc.add_link(cap);
      full.add_link(cap);
    }
    std::vector<int> live;
    std::vector<double> cap_of(256, MaxMinSolver::unlimited);
    std::vector<int> changed;
    for (int step = 0; step < 60; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        const std::size_t k = rng() % live.size();
        const int f = live[k];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        std::vector<int> links;
        for (int l = 0; l < nl; ++l) {
          for (int g : inc.flows_on(l)) {
            if (g == f) links.push_back(l);
          }
        }
        inc.remove_flow(f);
        full.remove_flow(f);
        inc.solve_around(links, changed);
      } else {
        std::vector<int> links;
        for (int l = 0; l < nl; ++l) {
          if (rng() % 3 == 0) links.push_back(l);
        }
        if (links.empty()) links.push_back(static_cast<int>(rng() % nl));
        const double cap =
            rng() % 4 == 0 ? 1.0 + static_cast<double>(rng() % 30) : MaxMinSolver::unlimited;
        const int f = inc.add_flow(links, cap);
        ASSERT_EQ(full.add_flow(links, cap), f);
        cap_of[f] = cap;
        live.push_back(f);
        inc.solve_around(links, changed);
      }
      full.solve();
      for (int f : live)
        ASSERT_NEAR(inc.rate(f), full.rate(f), 1e-9 * full.rate(f)) << trial << " " << step;
    }
    // Fairness of the final allocation.
    std::vector<double> load(static_cast<std::size_t>(nl), 0.0),
        fastest(static_cast<std::size_t>(nl), 0.0);
    for (int l = 0; l < nl; ++l) {
      for (int f : full.flows_on(l)) {
        load[l] += full.rate(f);
        fastest[l] = std::max(fastest[l], full.rate(f));
      }
      EXPECT_LE(load[l], full.capacity(l) * (1 + 1e-9));
    }
    for (int f : live) {
      bool bottlenecked = false;
      for (int l = 0; l < nl; ++l) {
        for (int g : full.flows_on(l)) {
          if (g == f && load[l] >= full.capacity(l) * (1 - 1e-9) &&
              full.rate(f) >= fastest[l] * (1 - 1e-9)) {
            bottlenecked = true;
          }
        }
      }
      EXPECT_TRUE(bottlenecked || full.rate(f) == cap_of[f]) << "flow " << f;
    }
  }
}

}  // namespace
}  // namespace ssim::sim
