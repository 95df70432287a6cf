// Single-switch topologies: the alpha-beta pass takes every route from per-rank arrays
// (RouteCache::star) instead of the route cache, with the results of the general path bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "sim/executor.hpp"
#include "tests/sim/fixtures.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// n GPUs on one switch, each with its own up and down link of random bandwidth and latency
// (a few distinct values, so that routes tie and differ), optionally added in a shuffled order.
topo::Topology random_star(std::mt19937_64& rng, int n) {
  topo::Topology t;
  for (int r = 0; r < n; ++r) t.add_gpu("gpu" + std::to_string(r));
  const int sw = t.add_switch("switch");
  auto bandwidth = [&] { return BytesPerSecond{1e9 * static_cast<double>(1 + rng() % 4)}; };
  auto latency = [&] { return Seconds{1e-7 * static_cast<double>(rng() % 5) + 3e-9}; };
  for (int r = 0; r < n; ++r) {
    if (rng() % 2) {
      t.add_duplex_link(r, sw, bandwidth(), latency());
    } else {
      t.add_link(sw, r, bandwidth(), latency());
      t.add_link(r, sw, bandwidth(), latency());
    }
  }
  return t;
}

// The same topology with one more link that no route takes (GPU 0 to a dead-end switch): not a
// star any more, so the general path (route cache) runs; the extra link is last.
topo::Topology with_dead_end(const topo::Topology& star) {
  topo::Topology t = star;
  const int dead = t.add_switch("dead-end");
  t.add_link(t.vertex_of_rank(0), dead, BytesPerSecond{1e9}, Seconds{0});
  return t;
}

// Whether a RouteCache over `t` finds a single switch.
bool is_star(const topo::Topology& t) { return RouteCache(t).star() != nullptr; }

TEST(StarRoutes, FoundOnSingleSwitchesOnly) {
  EXPECT_TRUE(is_star(testing::switch_of(8, 450e9, 3e-6)));
  EXPECT_TRUE(is_star(testing::switch_of(2, 450e9, 3e-6)));
  EXPECT_FALSE(is_star(
      topo::make_ring({.ranks = 8, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{1e-6}})));
  EXPECT_FALSE(is_star(topo::make_fully_connected(
      {.ranks = 4, .bandwidth = BytesPerSecond{50e9}, .latency = Seconds{1e-6}})));
  std::mt19937_64 rng(3);
  EXPECT_TRUE(is_star(random_star(rng, 5)));
  EXPECT_FALSE(is_star(with_dead_end(random_star(rng, 5))));
  // Two switches, each with its own GPUs: not one hub.
  topo::Topology two;
  for (int r = 0; r < 4; ++r) two.add_gpu("gpu" + std::to_string(r));
  const int a = two.add_switch("a"), b = two.add_switch("b");
  for (int r = 0; r < 4; ++r)
    two.add_duplex_link(r, r < 2 ? a : b, BytesPerSecond{1e9}, Seconds{1e-6});
  two.add_duplex_link(a, b, BytesPerSecond{1e9}, Seconds{1e-6});
  EXPECT_FALSE(is_star(two));
}

// StarRoutes::route is the cached route of every pair, bit for bit.
TEST(StarRoutes, SameRoutesAsTheRouteCache) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 9);
    const topo::Topology t = random_star(rng, n);
    for (LinkLists lists : {LinkLists::all, LinkLists::short_only}) {
      RouteCache cache(t, lists);
      ASSERT_NE(cache.star(), nullptr);
      for (int s = 0; s < n; ++s) {
        for (int d = 0; d < n; ++d) {
          if (s == d) continue;
          const CachedRoute a = cache.route(cache.find(s, d));
          const CachedRoute b = cache.star()->route(s, d);
          ASSERT_TRUE(same_bits(a.latency, b.latency)) << s << "->" << d;
          ASSERT_TRUE(same_bits(a.bandwidth, b.bandwidth)) << s << "->" << d;
          ASSERT_TRUE(same_bits(a.inverse_bandwidth, b.inverse_bandwidth)) << s << "->" << d;
          ASSERT_EQ(a.link_count, b.link_count);
          const std::vector<int> links = t.route(s, d).links;
          ASSERT_EQ(links, (std::vector<int>{cache.star()->up[s], cache.star()->down[d]}));
        }
      }
    }
  }
}

// Random single-switch topologies, schedules (registry algorithms and random transfer lists),
// sizes, gamma, rank maps and arrivals: the star path (1 and 3 threads, every round eligible for
// the parallel path) gives the general path's results bit for bit, streamed or not.
TEST(StarRoutes, SameResultsAsTheGeneralPath) {
  std::mt19937_64 rng(2024);
  int cases = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 30);
    const char* names[] = {"ring", "rhd", "stragglar", "direct", "dbtree", "random"};
    const std::string name = names[rng() % std::size(names)];
    alg::Schedule s;
    if (name == "random") {
      s = testing::random_schedule(rng, n, 1 + static_cast<int>(rng() % 10));
    } else {
      if (!alg::find_algorithm(name).supports_ranks(n)) continue;
      s = alg::generate(name, n, alg::Options{});
    }
    const topo::Topology star = random_star(rng, n);
    const topo::Topology general = with_dead_end(star);
    const NetworkConfig net{
        NetworkKind::alphabeta,
        SecondsPerByte{rng() % 2 ? 0.0 : 1e-12 * static_cast<double>(rng() % 7)}};
    const Bytes bytes{static_cast<std::uint64_t>(s.chunks) * (1 + rng() % 100000) + rng() % 97};
    Executor fast(s, star, net, bytes);
    Executor slow(s, general, net, bytes);
    ASSERT_NE(fast.routes().star(), nullptr);
    ASSERT_EQ(slow.routes().star(), nullptr);
    const std::vector<Seconds> arrival = testing::at(testing::random_arrivals(rng, n, 50, 1e-6));
    RunOptions options;
    if (s.straggler) options.rank_map = straggler_rank_map(s, static_cast<int>(rng() % n));
    options.record_timeline = rng() % 4 == 0;
    const IterationResult want = slow.run(arrival, options);
    for (int threads : {1, 3}) {
      RunOptions o = options;
      o.threads = threads;
      o.parallel_round = 1;
      const std::string what = name + " n=" + std::to_string(n) + " threads " +
                               std::to_string(threads) + " trial " + std::to_string(trial);
      const IterationResult got = fast.run(arrival, o);
      ASSERT_EQ(got.finish.size(), want.finish.size()) << what;
      for (int r = 0; r < n; ++r)
        ASSERT_TRUE(same_bits(got.finish[r].value, want.finish[r].value)) << what << " rank " << r;
      EXPECT_TRUE(same_bits(got.completion.value, want.completion.value)) << what;
      EXPECT_TRUE(same_bits(got.algbw.value, want.algbw.value)) << what;
      // The general topology has the dead-end link last, which carries nothing.
      ASSERT_EQ(got.link_bytes.size() + 1, want.link_bytes.size()) << what;
      EXPECT_EQ(want.link_bytes.back(), 0u) << what;
      for (std::size_t l = 0; l < got.link_bytes.size(); ++l) {
        ASSERT_EQ(got.link_bytes[l], want.link_bytes[l]) << what << " link " << l;
        ASSERT_TRUE(same_bits(got.link_utilization[l], want.link_utilization[l])) << what;
      }
      ASSERT_EQ(got.timeline.size(), want.timeline.size()) << what;
      for (std::size_t i = 0; i < got.timeline.size(); ++i) {
        ASSERT_TRUE(same_bits(got.timeline[i].end.value, want.timeline[i].end.value)) << what;
        ASSERT_TRUE(same_bits(got.timeline[i].done.value, want.timeline[i].done.value)) << what;
      }
      // The event engine (general route lookups) agrees too.
      if (threads == 1) {
        RunOptions e = options;
        e.use_event_engine = true;
        const IterationResult ev = fast.run(arrival, e);
        for (int r = 0; r < n; ++r)
          ASSERT_TRUE(same_bits(ev.finish[r].value, got.finish[r].value)) << what << " event";
        EXPECT_EQ(ev.link_bytes, got.link_bytes) << what << " event";
      }
      ++cases;
    }
    // Streamed rounds take the same path.
    ScheduleRounds rounds(s);
    const IterationResult streamed = fast.run(rounds, arrival, options);
    for (int r = 0; r < n; ++r)
      ASSERT_TRUE(same_bits(streamed.finish[r].value, want.finish[r].value)) << name;
  }
  EXPECT_GT(cases, 60);
}

// The pass without a timeline or trace (StarPass: per-rank terms, no division per transfer)
// against the general path at larger n, on a uniform switch and on per-GPU links, streamed and
// materialized, with and without the parallel rounds: the same finish times, bit for bit, and
// the same link bytes.
TEST(StarRoutes, FastPassMatchesTheGeneralPathAtLargerN) {
  std::mt19937_64 rng(77);
  int cases = 0;
  for (const int n : {64, 127, 512}) {
    for (const char* name : {"ring", "rhd", "stragglar", "dbtree", "direct"}) {
      if (!alg::find_algorithm(name).supports_ranks(n)) continue;
      if (std::string(name) == "direct" && n > 256) continue;
      const alg::Schedule s = alg::generate(name, n, alg::Options{});
      for (const bool uniform : {true, false}) {
        const topo::Topology star =
            uniform ? testing::switch_of(n, 450e9 * 1.25, 3e-6) : random_star(rng, n);
        const topo::Topology general = with_dead_end(star);
        const NetworkConfig net{NetworkKind::alphabeta, SecondsPerByte{uniform ? 0.0 : 3e-12}};
        const Bytes bytes{(std::uint64_t{1} << 30) + 12345};
        Executor fast(s, star, net, bytes);
        Executor slow(s, general, net, bytes);
        ASSERT_NE(fast.routes().star(), nullptr);
        ASSERT_EQ(slow.routes().star(), nullptr);
        const std::vector<Seconds> arrival =
            testing::at(testing::random_arrivals(rng, n, 1000, 1e-7));
        RunOptions options;
        if (s.straggler) options.rank_map = straggler_rank_map(s, n / 3);
        const IterationResult want = slow.run(arrival, options);
        for (const int threads : {1, 2}) {
          RunOptions o = options;
          o.threads = threads;
          o.parallel_round = threads == 1 ? 16384 : 1;
          const std::string what = std::string(name) + " n=" + std::to_string(n) +
                                   (uniform ? " uniform" : " per-GPU links") + " threads " +
                                   std::to_string(threads);
          ScheduleRounds rounds(s);
          for (const IterationResult& got : {fast.run(arrival, o), fast.run(rounds, arrival, o)}) {
            ASSERT_EQ(got.finish.size(), want.finish.size()) << what;
            for (int r = 0; r < n; ++r)
              ASSERT_TRUE(same_bits(got.finish[r].value, want.finish[r].value))
                  << what << " rank " << r;
            ASSERT_TRUE(same_bits(got.completion.value, want.completion.value)) << what;
            ASSERT_EQ(got.transfers, want.transfers) << what;
            for (std::size_t l = 0; l < got.link_bytes.size(); ++l)
              ASSERT_EQ(got.link_bytes[l], want.link_bytes[l]) << what << " link " << l;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_GE(cases, 40);
}

}  // namespace
}  // namespace ssim::sim
