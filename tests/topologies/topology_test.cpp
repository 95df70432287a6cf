#include "topologies/topology.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "common/error.hpp"
#include "topologies/generators.hpp"

namespace ssim::topo {
namespace {

constexpr BytesPerSecond kBw{100e9};

Seconds ns(double v) { return Seconds{v * 1e-9}; }

// A straightforward reference for the routing contract in topology.hpp: Bellman-Ford costs
// (picoseconds, hops) to the destination, then every out-link that keeps the cost optimal.
struct Reference {
  struct Cost {
    std::int64_t ps = std::numeric_limits<std::int64_t>::max();
    int hops = 0;
    auto operator<=>(const Cost&) const = default;
  };
  const Topology& t;
  std::vector<Cost> cost;  // to the destination vertex

  Reference(const Topology& topo, int dst_vertex)
      : t(topo), cost(static_cast<std::size_t>(topo.node_count())) {
    cost[dst_vertex] = Cost{0, 0};
    for (bool changed = true; changed;) {
      changed = false;
      for (int l = 0; l < t.link_count(); ++l) {
        const Link& k = t.link(l);
        if (cost[k.to].ps == std::numeric_limits<std::int64_t>::max()) continue;
        const Cost c{cost[k.to].ps + ps(l), cost[k.to].hops + 1};
        if (c < cost[k.from]) {
          cost[k.from] = c;
          changed = true;
        }
      }
    }
  }
  std::int64_t ps(int l) const { return std::llround(t.link(l).latency.value * 1e12); }
  bool reachable(int v) const { return cost[v].ps != std::numeric_limits<std::int64_t>::max(); }
  std::vector<int> next_hops(int v) const {
    std::vector<int> out;
    for (int l : t.out_links(v)) {
      const Cost& c = cost[t.link(l).to];
      if (reachable(t.link(l).to) && Cost{c.ps + ps(l), c.hops + 1} == cost[v]) out.push_back(l);
    }
    return out;
  }
};

// Lowest-id next hop at every step.
std::vector<int> reference_route(const Topology& t, int src_rank, int dst_rank) {
  const int dst = t.vertex_of_rank(dst_rank);
  const Reference ref(t, dst);
  std::vector<int> links;
  for (int v = t.vertex_of_rank(src_rank); v != dst; v = t.link(links.back()).to)
    links.push_back(ref.next_hops(v)[0]);
  return links;
}

TEST(Topology, VerticesLinksAndAccessors) {
  Topology t;
  EXPECT_EQ(t.add_gpu("a"), 0);
  EXPECT_EQ(t.add_switch("sw"), 1);
  EXPECT_EQ(t.add_gpu("b"), 2);
  EXPECT_EQ(t.node_count(), 3);
  EXPECT_EQ(t.gpu_count(), 2);
  EXPECT_EQ(t.vertex_of_rank(1), 2);
  EXPECT_EQ(t.node(2).rank, 1);
  EXPECT_EQ(t.node(1).kind, NodeKind::switch_node);
  EXPECT_EQ(t.node(1).rank, -1);
  EXPECT_EQ(t.add_duplex_link(0, 1, kBw, ns(5), "nvlink"), 0);
  EXPECT_EQ(t.add_link(1, 2, BytesPerSecond{7}, ns(3)), 2);
  EXPECT_EQ(t.link_count(), 3);
  EXPECT_EQ(t.link(1).from, 1);
  EXPECT_EQ(t.link(1).to, 0);
  EXPECT_EQ(t.link(1).link_class, "nvlink");
  EXPECT_EQ(t.link(2).bandwidth.value, 7);
  EXPECT_EQ(t.out_links(1), (std::vector<int>{1, 2}));
  EXPECT_EQ(t.in_links(1), (std::vector<int>{0}));
  EXPECT_EQ(t.find_vertex("b"), 2);
  EXPECT_EQ(t.find_vertex("nope"), -1);
  EXPECT_THROW(t.node(3), InputError);
  EXPECT_THROW(t.link(3), InputError);
  EXPECT_THROW(t.vertex_of_rank(2), InputError);
}

TEST(Topology, InvalidLinksThrowAndAddNothing) {
  Topology t;
  t.add_gpu("a");
  t.add_gpu("b");
  EXPECT_THROW(t.add_link(0, 2, kBw, ns(1)), InputError);
  EXPECT_THROW(t.add_link(-1, 1, kBw, ns(1)), InputError);
  EXPECT_THROW(t.add_link(1, 1, kBw, ns(1)), InputError);
  EXPECT_THROW(t.add_link(0, 1, BytesPerSecond{0}, ns(1)), InputError);
  EXPECT_THROW(t.add_link(0, 1, BytesPerSecond{std::nan("")}, ns(1)), InputError);
  EXPECT_THROW(t.add_link(0, 1, BytesPerSecond{std::numeric_limits<double>::infinity()}, ns(1)),
               InputError);
  EXPECT_THROW(t.add_link(0, 1, kBw, Seconds{-1e-9}), InputError);
  EXPECT_THROW(t.add_link(0, 1, kBw, Seconds{2.0}), InputError);
  EXPECT_THROW(t.add_duplex_link(0, 5, kBw, ns(1)), InputError);
  EXPECT_EQ(t.link_count(), 0);
  EXPECT_NO_THROW(t.add_link(0, 1, kBw, Seconds{0}));
}

// 0 -> 1 direct costs 10ns; 0 -> s1 -> s2 -> 1 costs 3 x 2ns = 6ns, so three hops win.
TEST(Topology, ShortestByLatencyNotHops) {
  Topology t;
  t.add_gpu("g0");
  t.add_gpu("g1");
  const int s1 = t.add_switch("s1");
  const int s2 = t.add_switch("s2");
  const int direct = t.add_link(0, 1, BytesPerSecond{50}, ns(10));
  const int a = t.add_link(0, s1, BytesPerSecond{30}, ns(2));
  const int b = t.add_link(s1, s2, BytesPerSecond{10}, ns(2));
  const int c = t.add_link(s2, 1, BytesPerSecond{20}, ns(2));
  const Route r = t.route(0, 1);
  EXPECT_EQ(r.links, (std::vector<int>{a, b, c}));
  EXPECT_DOUBLE_EQ(r.latency.value, 6e-9);
  EXPECT_EQ(r.bandwidth.value, 10);  // bottleneck s1 -> s2
  EXPECT_NE(r.links[0], direct);
}

// Equal latency 4ns: direct 0 -> 1 (one hop, added last) beats 0 -> s -> 1 (two hops).
TEST(Topology, EqualLatencyPrefersFewerHops) {
  Topology t;
  t.add_gpu("g0");
  t.add_gpu("g1");
  const int s = t.add_switch("s");
  t.add_link(0, s, kBw, ns(2));
  t.add_link(s, 1, kBw, ns(2));
  const int direct = t.add_link(0, 1, kBw, ns(4));
  EXPECT_EQ(t.route(0, 1).links, (std::vector<int>{direct}));
}

// Two equal paths 0 -> sA -> 1 and 0 -> sB -> 1: the one whose first link has the lower id
// wins, whichever switch was added first.
TEST(Topology, EqualPathsPreferLowestLinkIds) {
  for (bool b_first : {false, true}) {
    Topology t;
    t.add_gpu("g0");
    t.add_gpu("g1");
    const int sa = t.add_switch("sA");
    const int sb = t.add_switch("sB");
    const int first = b_first ? sb : sa;
    const int second = b_first ? sa : sb;
    const int l0 = t.add_link(0, first, kBw, ns(1));
    const int l1 = t.add_link(first, 1, kBw, ns(1));
    t.add_link(0, second, kBw, ns(1));
    t.add_link(second, 1, kBw, ns(1));
    EXPECT_EQ(t.route(0, 1).links, (std::vector<int>{l0, l1})) << b_first;
  }
}

// Path B = 2.1ns + 0ns and path A = 0.3ns + 1.8ns: as doubles A is shorter (the sum rounds
// to 2.0999999999999998e-9) but both are 2100 ps, so they tie on latency and hops and B,
// added first and so with the lower first link id, wins. route() reports B's double sum.
TEST(Topology, LatencyComparedInWholePicoseconds) {
  ASSERT_LT(0.3e-9 + 1.8e-9, 2.1e-9 + 0.0);
  Topology t;
  t.add_gpu("g0");
  t.add_gpu("g1");
  const int sb = t.add_switch("sB");
  const int sa = t.add_switch("sA");
  const int b0 = t.add_link(0, sb, kBw, Seconds{2.1e-9});
  const int b1 = t.add_link(sb, 1, kBw, Seconds{0});
  t.add_link(0, sa, kBw, Seconds{0.3e-9});
  t.add_link(sa, 1, kBw, Seconds{1.8e-9});
  const Route r = t.route(0, 1);
  EXPECT_EQ(r.links, (std::vector<int>{b0, b1}));
  EXPECT_EQ(r.latency.value, 2.1e-9);
}

TEST(Topology, BadRouteRequestsNameTheRanks) {
  Topology t;
  t.add_gpu("g0");
  t.add_gpu("g1");
  t.add_gpu("g2");
  t.add_duplex_link(0, 1, kBw, ns(1));
  t.add_link(2, 0, kBw, ns(1));  // g2 can send but nothing reaches it
  try {
    t.route(0, 2);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 2"), std::string::npos) << msg;
  }
  EXPECT_EQ(t.route(2, 1).links.size(), 2u);
  EXPECT_THROW(t.route(1, 1), InputError);
  EXPECT_THROW(t.route(0, 3), InputError);
  EXPECT_THROW(t.route(-1, 0), InputError);
}

TEST(Topology, CachedRoutesFollowLaterChanges) {
  Topology t;
  t.add_gpu("g0");
  t.add_gpu("g1");
  const int s = t.add_switch("s");
  t.add_duplex_link(0, s, kBw, ns(5));
  t.add_duplex_link(1, s, kBw, ns(5));
  EXPECT_EQ(t.route(0, 1).links.size(), 2u);
  const int shortcut = t.add_link(0, 1, kBw, ns(1));
  EXPECT_EQ(t.route(0, 1).links, (std::vector<int>{shortcut}));
}

TEST(Topology, CopiesRouteTheSameAndStayIndependent) {
  Topology a = make_torus2d({.x = 3, .y = 4, .bandwidth = kBw, .latency = ns(1)});
  a.set_ecmp(true);
  const Route before = a.route(0, 7, 42);
  Topology b = a;  // shares a's cached tables
  Topology c;
  c = a;
  EXPECT_EQ(b.route(0, 7, 42).links, before.links);
  EXPECT_EQ(c.route(0, 7, 42).links, before.links);
  EXPECT_EQ(a.route(0, 7, 42).links, before.links);
  EXPECT_EQ(b.name, a.name);
  EXPECT_TRUE(b.ecmp());
  const int shortcut = b.add_link(0, 7, kBw, ns(0.5));
  EXPECT_EQ(b.route(0, 7, 42).links, (std::vector<int>{shortcut}));
  EXPECT_EQ(a.route(0, 7, 42).links, before.links);
  Topology moved = std::move(c);
  EXPECT_EQ(moved.route(0, 7, 42).links, before.links);
}

// Copies share their graph until one changes (copy on write): every mutator of a copy leaves
// the original as it was, and the original's later changes leave the copy alone.
TEST(Topology, EveryMutatorOfACopyLeavesTheOriginalAlone) {
  Topology a;
  a.add_gpu("g0");
  a.add_gpu("g1");
  const int s = a.add_switch("s");
  a.add_duplex_link(0, s, kBw, ns(5));
  a.add_duplex_link(1, s, kBw, ns(5));
  (void)a.route(0, 1);  // a cached table, shared by the copies below
  const auto unchanged = [&](const Topology& t) {
    EXPECT_EQ(t.gpu_count(), 2);
    EXPECT_EQ(t.node_count(), 3);
    EXPECT_EQ(t.link_count(), 4);
    EXPECT_FALSE(t.ecmp());
    EXPECT_FALSE(t.has_reducing_switch());
    EXPECT_EQ(t.find_vertex("g2"), -1);
    EXPECT_EQ(t.route(0, 1).links.size(), 2u);
  };
  {
    Topology b = a;
    b.add_gpu("g2");
    EXPECT_EQ(b.gpu_count(), 3);
    unchanged(a);
  }
  {
    Topology b = a;
    b.add_switch("s2");
    EXPECT_EQ(b.node_count(), 4);
    unchanged(a);
  }
  {
    Topology b = a;
    b.add_link(0, 1, kBw, ns(1));
    EXPECT_EQ(b.route(0, 1).links.size(), 1u);
    unchanged(a);
  }
  {
    Topology b = a;
    b.set_ecmp(true);
    EXPECT_TRUE(b.ecmp());
    unchanged(a);
  }
  {
    Topology b = a;
    b.set_switch_reduction(s, SwitchReduction{BytesPerSecond{1e11}, ns(100)});
    EXPECT_TRUE(b.has_reducing_switch());
    unchanged(a);
  }
  {
    Topology b = a;
    b.set_route_cache_limit(0);  // tiny cache: still routes the same
    EXPECT_EQ(b.route(0, 1).links.size(), 2u);
    unchanged(a);
  }
  Topology c = a;  // the original changes after the copy: the copy keeps what it had
  a.add_gpu("g2");
  EXPECT_EQ(a.gpu_count(), 3);
  unchanged(c);
}

// A diamond 0 -> {sA, sB} -> 1: ECMP uses both paths across hashes, each hash always the
// same path; without ECMP the hash is ignored.
TEST(Topology, EcmpSpreadsDeterministically) {
  Topology t;
  t.add_gpu("g0");
  t.add_gpu("g1");
  const int sa = t.add_switch("sA");
  const int sb = t.add_switch("sB");
  const int a = t.add_link(0, sa, kBw, ns(1));
  t.add_link(sa, 1, kBw, ns(1));
  const int b = t.add_link(0, sb, kBw, ns(1));
  t.add_link(sb, 1, kBw, ns(1));
  std::set<int> first_hops;
  for (std::uint64_t h = 0; h < 64; ++h) EXPECT_EQ(t.route(0, 1, h).links[0], a);
  t.set_ecmp(true);
  for (std::uint64_t h = 0; h < 64; ++h) {
    const Route r = t.route(0, 1, h);
    first_hops.insert(r.links[0]);
    EXPECT_EQ(t.route(0, 1, h).links, r.links);
  }
  EXPECT_EQ(first_hops, (std::set<int>{a, b}));
}

// Random small graphs with many ties (switches and GPUs mixed, so both the per-GPU tables and
// the routes composed from switch tables are exercised) against the reference: the default
// route equals the lowest-id greedy path, every ECMP route is optimal, and over 64 hashes the
// first hops are exactly the optimal next hops. Link latencies are 0..3 ns, or `one_latency`
// for every link (tables then come from a breadth-first search instead of Dijkstra).
void match_reference_on_random_graphs(std::uint32_t seed, std::optional<double> one_latency,
                                      int& composed_checked, int& composed_ties) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 150; ++trial) {
    Topology t;
    const int gpus = 2 + static_cast<int>(rng() % 6);
    const int switches = 1 + static_cast<int>(rng() % 4);
    std::vector<int> switch_ids;
    std::vector<char> attached;  // GPUs whose in-links all come from switches
    while (t.gpu_count() < gpus || static_cast<int>(switch_ids.size()) < switches) {
      const bool gpu =
          static_cast<int>(switch_ids.size()) == switches || (t.gpu_count() < gpus && rng() % 2);
      if (gpu) {
        t.add_gpu(std::to_string(t.node_count()));
        attached.push_back(rng() % 2);
      } else {
        switch_ids.push_back(t.add_switch(std::to_string(t.node_count())));
        attached.push_back(0);
      }
    }
    const int n = t.node_count();
    const int links = 2 * n + static_cast<int>(rng() % static_cast<unsigned>(3 * n));
    for (int l = 0; l < links; ++l) {
      int from = static_cast<int>(rng() % static_cast<unsigned>(n));
      const int to = static_cast<int>(rng() % static_cast<unsigned>(n));
      if (attached[to] && t.node(from).kind == NodeKind::gpu)
        from = switch_ids[rng() % switch_ids.size()];
      const double latency = static_cast<double>(rng() % 4);
      if (from != to)
        t.add_link(from, to, BytesPerSecond{1.0 + rng() % 5}, ns(one_latency.value_or(latency)));
    }
    if (rng() % 2) t.set_route_cache_limit(0);
    for (int d = 0; d < t.gpu_count(); ++d) {
      const int dv = t.vertex_of_rank(d);
      const Reference ref(t, dv);
      bool composed = !t.in_links(dv).empty();
      for (int l : t.in_links(dv))
        composed = composed && t.node(t.link(l).from).kind == NodeKind::switch_node;
      for (int s = 0; s < t.gpu_count(); ++s) {
        if (s == d) continue;
        const int sv = t.vertex_of_rank(s);
        t.set_ecmp(false);
        if (!ref.reachable(sv)) {
          EXPECT_THROW(t.route(s, d), InputError);
          continue;
        }
        composed_checked += composed;
        const Route r = t.route(s, d);
        ASSERT_EQ(r.links, reference_route(t, s, d)) << "trial " << trial << " " << s << "->" << d;
        const RouteSummary sum = t.route_summary(s, d);  // from the table's hops and bottleneck
        ASSERT_EQ(sum.hops, static_cast<int>(r.links.size())) << "trial " << trial;
        ASSERT_EQ(sum.bandwidth.value, r.bandwidth.value) << "trial " << trial;
        ASSERT_EQ(sum.latency.value, r.latency.value) << "trial " << trial;
        t.set_ecmp(true);
        std::set<int> first_hops;
        for (std::uint64_t h = 0; h < 64; ++h) {
          const Route e = t.route(s, d, h);
          first_hops.insert(e.links[0]);
          int v = sv;
          for (int l : e.links) {
            const std::vector<int> ok = ref.next_hops(v);
            ASSERT_NE(std::find(ok.begin(), ok.end(), l), ok.end()) << "trial " << trial;
            v = t.link(l).to;
          }
          ASSERT_EQ(v, dv);
        }
        const std::vector<int> want = ref.next_hops(sv);
        EXPECT_EQ(first_hops, std::set<int>(want.begin(), want.end())) << "trial " << trial;
        composed_ties += composed && want.size() > 1;
      }
    }
  }
}

TEST(Topology, MatchesReferenceOnRandomGraphs) {
  int composed_checked = 0;  // pairs whose destination's in-links all come from switches
  int composed_ties = 0;     // ... with several optimal first hops
  match_reference_on_random_graphs(12345, std::nullopt, composed_checked, composed_ties);
  std::printf("composed pairs %d, with ties %d\n", composed_checked, composed_ties);
  EXPECT_GT(composed_checked, 300);
  EXPECT_GT(composed_ties, 30);
}

TEST(Topology, OneLatencyMatchesReferenceOnRandomGraphs) {
  for (const double latency : {0.0, 2.0}) {
    int composed_checked = 0, composed_ties = 0;
    match_reference_on_random_graphs(777, latency, composed_checked, composed_ties);
    EXPECT_GT(composed_checked, 300) << latency;
    EXPECT_GT(composed_ties, 30) << latency;
  }
}

// A route to a neighbour over its only direct link, when that link's latency is at most twice
// the least link latency, is taken without the destination's table (direct_link in
// topology.cpp). Random graphs whose latencies lie in [1, 2] ns (the shortcut applies to every
// single direct link) or [1, 3] ns (to some), with parallel links, against the reference; route
// summaries match the routes; ECMP routes are optimal.
TEST(Topology, DirectNeighbourRoutesMatchReference) {
  std::mt19937 rng(4242);
  int direct = 0;
  for (int trial = 0; trial < 120; ++trial) {
    Topology t;
    const int gpus = 2 + static_cast<int>(rng() % 7);
    const int switches = static_cast<int>(rng() % 3);
    for (int g = 0; g < gpus; ++g) t.add_gpu("g" + std::to_string(g));
    for (int k = 0; k < switches; ++k) t.add_switch("s" + std::to_string(k));
    const int n = t.node_count();
    const unsigned spread = trial % 2 ? 11 : 21;  // latencies 1.0 .. 2.0 or 1.0 .. 3.0 ns
    auto latency = [&] { return ns(1.0 + 0.1 * static_cast<double>(rng() % spread)); };
    for (int v = 0; v < n; ++v)  // a cycle: every pair is reachable
      t.add_link(v, (v + 1) % n, BytesPerSecond{1.0 + rng() % 5}, latency());
    const int chords = static_cast<int>(rng() % static_cast<unsigned>(3 * n));
    for (int c = 0; c < chords; ++c) {
      const int a = static_cast<int>(rng() % static_cast<unsigned>(n));
      const int b = static_cast<int>(rng() % static_cast<unsigned>(n));
      if (a != b) t.add_link(a, b, BytesPerSecond{1.0 + rng() % 5}, latency());
    }
    for (int s = 0; s < gpus; ++s) {
      for (int d = 0; d < gpus; ++d) {
        if (s == d) continue;
        const int sv = t.vertex_of_rank(s), dv = t.vertex_of_rank(d);
        int links_to_d = 0;
        for (int l : t.out_links(sv)) links_to_d += t.link(l).to == dv;
        t.set_ecmp(false);
        const Route r = t.route(s, d);
        ASSERT_EQ(r.links, reference_route(t, s, d)) << "trial " << trial << " " << s << "->" << d;
        const RouteSummary sum = t.route_summary(s, d);
        ASSERT_EQ(sum.latency.value, r.latency.value) << "trial " << trial;
        ASSERT_EQ(sum.bandwidth.value, r.bandwidth.value) << "trial " << trial;
        ASSERT_EQ(sum.hops, static_cast<int>(r.links.size())) << "trial " << trial;
        direct += links_to_d == 1 && r.links.size() == 1;
        t.set_ecmp(true);
        const Reference ref(t, dv);
        for (std::uint64_t h = 0; h < 8; ++h) {
          const Route e = t.route(s, d, h);
          int v = sv;
          for (int l : e.links) {
            const std::vector<int> ok = ref.next_hops(v);
            ASSERT_NE(std::find(ok.begin(), ok.end(), l), ok.end()) << "trial " << trial;
            v = t.link(l).to;
          }
          ASSERT_EQ(v, dv);
        }
      }
    }
  }
  EXPECT_GT(direct, 300);
}

// With the cache limited to nothing, every route recomputes (or keeps only the last table)
// and still returns exactly what the unlimited cache returns.
TEST(Topology, TinyCacheRoutesTheSame) {
  const Topology full = make_hierarchical({.nodes = 3,
                                           .gpus_per_node = 4,
                                           .nvlink_bandwidth = kBw,
                                           .nvlink_latency = ns(2),
                                           .nic_bandwidth = kBw,
                                           .nic_latency = ns(1),
                                           .fabric = FabricKind::rail_optimized,
                                           .spines = 2,
                                           .spine_bandwidth = kBw,
                                           .spine_latency = ns(1)});
  Topology tiny = full;
  tiny.set_route_cache_limit(0);
  std::size_t largest = 0;
  for (int s = 0; s < full.gpu_count(); ++s) {
    for (int d = 0; d < full.gpu_count(); ++d) {
      if (s == d) continue;
      EXPECT_EQ(tiny.route(s, d).links, full.route(s, d).links);
      largest = std::max(largest, tiny.route_cache_bytes());
    }
  }
  EXPECT_GT(full.route_cache_bytes(), largest);  // full kept many tables, tiny at most one
}

// Several threads route on one shared const Topology, starting with an empty cache (so they
// race to compute and insert tables) and again with no cache room (so they also evict), and
// get the serial answers.
TEST(Topology, ConcurrentRoutesOnOneTopology) {
  const FatTreeParams params{.k = 4, .tiers = 3, .bandwidth = kBw, .latency = ns(1)};
  Topology serial = make_fat_tree(params);
  serial.set_ecmp(true);
  std::vector<std::vector<int>> expect;
  for (int s = 0; s < 16; ++s) {
    for (int d = 0; d < 16; ++d) {
      if (s != d)
        expect.push_back(serial.route(s, d, static_cast<std::uint64_t>(s * 16 + d)).links);
    }
  }
  for (std::size_t limit : {std::size_t{1} << 30, std::size_t{0}}) {
    Topology t = make_fat_tree(params);
    t.set_ecmp(true);
    t.set_route_cache_limit(limit);
    const Topology& shared = t;
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int th = 0; th < 4; ++th) {
      threads.emplace_back([&, th] {
        for (int rep = 0; rep < 10; ++rep) {
          std::size_t i = 0;
          for (int s = 0; s < 16; ++s) {
            for (int d = 0; d < 16; ++d) {
              if (s == d) continue;
              const auto h = static_cast<std::uint64_t>(s * 16 + d);
              mismatches[th] += shared.route(s, d, h).links != expect[i++];
            }
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(mismatches, (std::vector<int>(4, 0))) << "cache limit " << limit;
  }
}

// make_switch(16384): every route is GPU -> switch -> GPU and all of them share the switch's
// one table (16385 vertices x (4 + 8 + 4) bytes ~ 262 KB), not a table per destination.
TEST(Topology, LargeSwitchSharesOneTable) {
  const Topology t = make_switch({.ranks = 16384, .bandwidth = kBw, .latency = ns(2)});
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const int s = static_cast<int>(rng() % 16384);
    const int d = static_cast<int>((s + 1 + rng() % 16383) % 16384);
    const Route r = t.route(s, d);
    ASSERT_EQ(r.links.size(), 2u);
    EXPECT_EQ(t.link(r.links[0]).from, s);
    EXPECT_EQ(t.link(r.links[1]).to, d);
  }
  EXPECT_LT(t.route_cache_bytes(), std::size_t{400} << 10);
}

}  // namespace
}  // namespace ssim::topo

namespace ssim::topo {
namespace {

// route_summary equals route() bit for bit, and add_route_bytes equals walking every route, on
// random graphs of GPUs fed by GPUs (own tables) and switches, with few latencies (the O(1)
// path) or many (walks), ECMP off and on, and on rings and tori.
TEST(Topology, SummariesAndRouteBytesMatchRoutes) {
  std::mt19937 rng(777);
  std::vector<Topology> topologies;
  topologies.push_back(make_ring({.ranks = 9, .bandwidth = kBw, .latency = Seconds{1e-6 / 3}}));
  topologies.push_back(make_torus2d({.x = 4, .y = 5, .bandwidth = kBw, .latency = ns(0.7)}));
  for (int trial = 0; trial < 120; ++trial) {
    Topology t;
    const int gpus = 3 + static_cast<int>(rng() % 10);
    const int switches = static_cast<int>(rng() % 3);
    for (int g = 0; g < gpus; ++g) t.add_gpu("g" + std::to_string(g));
    for (int s = 0; s < switches; ++s) t.add_switch("s" + std::to_string(s));
    const int n = t.node_count();
    const bool many_latencies = trial % 4 == 0;  // more than 16 distinct: no O(1) path
    for (int v = 0; v < n; ++v) {                // a cycle, so every pair is reachable, plus chords
      t.add_duplex_link(v, (v + 1) % n, BytesPerSecond{1.0 + rng() % 5}, ns(0.3 + rng() % 3 * 1.1));
    }
    const int chords = static_cast<int>(rng() % static_cast<unsigned>(2 * n));
    for (int c = 0; c < chords; ++c) {
      const int a = static_cast<int>(rng() % static_cast<unsigned>(n));
      const int b = static_cast<int>(rng() % static_cast<unsigned>(n));
      const double lat = many_latencies ? 0.1 + 0.01 * c : 0.3 + rng() % 3 * 1.1;
      if (a != b) t.add_link(a, b, BytesPerSecond{1.0 + rng() % 5}, ns(lat));
    }
    topologies.push_back(std::move(t));
  }
  int compared = 0;
  for (std::size_t i = 0; i < topologies.size(); ++i) {
    Topology& t = topologies[i];
    t.set_ecmp(i % 5 == 4);
    const int g = t.gpu_count();
    std::vector<RouteLoad> loads;
    for (int s = 0; s < g; ++s) {
      for (int d = 0; d < g; ++d) {
        if (s == d) continue;
        const std::uint64_t hash = static_cast<std::uint64_t>(s * g + d);
        const Route r = t.route(s, d, hash);
        const RouteSummary sum = t.route_summary(s, d, hash);
        ASSERT_EQ(sum.latency.value, r.latency.value) << i << ": " << s << "->" << d;
        ASSERT_EQ(sum.bandwidth.value, r.bandwidth.value) << i << ": " << s << "->" << d;
        ASSERT_EQ(sum.hops, static_cast<int>(r.links.size())) << i << ": " << s << "->" << d;
        ++compared;
        for (std::uint64_t k = rng() % 3; k > 0; --k)
          loads.push_back({s, d, hash, 1 + rng() % 1000});
      }
    }
    std::vector<std::uint64_t> want(static_cast<std::size_t>(t.link_count()), 0);
    for (const RouteLoad& load : loads) {
      for (int l : t.route(load.src_rank, load.dst_rank, load.flow_hash).links)
        want[static_cast<std::size_t>(l)] += load.bytes;
    }
    std::vector<std::uint64_t> got(want.size(), 5);
    for (std::uint64_t& b : want) b += 5;  // adds to what is there
    t.add_route_bytes(loads, got);
    ASSERT_EQ(got, want) << "topology " << i;
  }
  EXPECT_GT(compared, 5000);
  EXPECT_THROW(topologies[0].route_summary(0, 0), InputError);
  EXPECT_THROW(topologies[0].route_summary(0, 9), InputError);
}

}  // namespace
}  // namespace ssim::topo
