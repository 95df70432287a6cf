// sim::find_shared_link: the links the alpha-beta model does not share (issue 15, item 7).
#include <gtest/gtest.h>

#include "algorithms/registry.hpp"
#include "sim/simulation.hpp"
#include "topologies/generators.hpp"

namespace ssim::sim {
namespace {

topo::Topology ring_topology(int n) {
  return topo::make_ring({.ranks = n, .bandwidth = BytesPerSecond{1e11}, .latency = Seconds{1e-6}});
}

std::optional<SharedLink> shared(const alg::Schedule& s, const topo::Topology& t) {
  RouteCache routes(t);
  return find_shared_link(s, routes);
}

TEST(SharedLink, PortsAlreadySerializeOneSenderOrOneReceiver) {
  // Ring topology of 4: 0 -> 2 goes 0 -> 1 -> 2 (or 0 -> 3 -> 2). Transfers 0 -> 1 and 0 -> 2 in
  // one round share link 0 -> 1 but also the sender; 0 -> 2 and 1 -> 2 share the receiver.
  const topo::Topology t = ring_topology(4);
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 4, 4);
  alg::Round& r = s.add_round();
  r.add(0, 1, 0, 1, alg::Op::reduce);
  r.add(0, 2, 1, 2, alg::Op::reduce);
  EXPECT_FALSE(shared(s, t));
  // 1 -> 3 takes two hops (through 2 or 0); with 2 -> 3 it can share only the receiver's link.
  alg::Schedule u = alg::Schedule::make(alg::Collective::allreduce, "hand", 4, 4);
  u.add_round().add(1, 3, 0, 1, alg::Op::reduce);
  u.rounds[0].add(2, 3, 1, 2, alg::Op::reduce);
  EXPECT_FALSE(shared(u, t));
}

TEST(SharedLink, DifferentSendersAndReceiversOnOneLinkAreFound) {
  // Ring of 8: 0 -> 1 -> 2 -> 3 is the only shortest path from 0 to 3, so 0 -> 3 and 1 -> 2
  // (different senders, different receivers) both use link 1 -> 2.
  const topo::Topology t = ring_topology(8);
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 8, 8);
  s.add_round().add(0, 1, 0, 1, alg::Op::reduce);  // round 0: nothing shared
  alg::Round& r = s.add_round();
  r.add(0, 3, 0, 1, alg::Op::reduce);
  r.add(1, 2, 1, 2, alg::Op::reduce);
  const auto found = shared(s, t);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->round, 1);
  EXPECT_EQ(found->link_name, "gpu1 -> gpu2");
  EXPECT_EQ(found->transfers, 2);
  EXPECT_EQ(found->describe(),
            "round 1: link gpu1 -> gpu2 carries 2 transfers with different senders and receivers");
}

// A round whose pairs repeat the last scanned round's is skipped (a ring's every step); one of
// the same size with other pairs is scanned, and the round is still numbered in schedule order.
TEST(SharedLink, RepeatedRoundsAreSkippedNewPairsAreNot) {
  const topo::Topology t = ring_topology(8);
  alg::Schedule s = alg::Schedule::make(alg::Collective::allreduce, "hand", 8, 8);
  for (int i = 0; i < 3; ++i) {  // rounds 0-2: 0 -> 3 and 5 -> 6 share nothing
    alg::Round& r = s.add_round();
    r.add(0, 3, 0, 1, alg::Op::reduce);
    r.add(5, 6, 1, 2, alg::Op::reduce);
  }
  alg::Round& r = s.add_round();  // round 3: as many transfers, 1 -> 2 now shares 0 -> 3's link
  r.add(0, 3, 0, 1, alg::Op::reduce);
  r.add(1, 2, 1, 2, alg::Op::reduce);
  const auto found = shared(s, t);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->round, 3);
  EXPECT_EQ(found->link_name, "gpu1 -> gpu2");
}

TEST(SharedLink, RingOnARingIsCleanRhdIsNot) {
  const topo::Topology t = ring_topology(8);
  EXPECT_FALSE(shared(alg::generate("ring", 8, {}), t));
  EXPECT_TRUE(shared(alg::generate("rhd", 8, {}), t));
  // A switch gives every GPU its own up and down link: only ports are shared.
  const topo::Topology sw =
      topo::make_switch({.ranks = 8, .bandwidth = BytesPerSecond{1e11}, .latency = Seconds{1e-6}});
  for (const alg::AlgorithmInfo& info : alg::algorithms()) {
    if (info.in_network) continue;  // switch reductions: nvls_test
    EXPECT_FALSE(shared(alg::generate(info.name, 8, {}), sw)) << info.name;
  }
}

}  // namespace
}  // namespace ssim::sim

namespace ssim::sim {
namespace {

// A cache that keeps only short routes' links (the alpha-beta pass's) answers like one that
// keeps them all: the same latency, bandwidth and hop count, the same links on request, the
// same per-link byte sums; and the shared-link scan finds the same link with either.
TEST(SharedLink, ShortOnlyRouteCacheEqualsFullOne) {
  const topo::Topology t = ring_topology(40);  // routes of up to 20 links
  RouteCache all(t), short_only(t, LinkLists::short_only);
  std::vector<std::uint64_t> bytes;
  std::vector<int> scratch;
  std::uint64_t b = 1;
  for (int s = 0; s < 40; ++s) {
    for (int d = 0; d < 40; d += 1 + s % 3) {
      if (s == d) continue;
      const CachedRoute& x = all.route(all.find(s, d));
      const std::uint32_t i = short_only.find(s, d);
      const CachedRoute& y = short_only.route(i);
      ASSERT_EQ(x.latency, y.latency);
      ASSERT_EQ(x.inverse_bandwidth, y.inverse_bandwidth);
      ASSERT_EQ(x.link_count, y.link_count);
      const std::vector<int> want(all.links(x).begin(), all.links(x).end());
      const std::span<const int> got = short_only.links(y, scratch);
      ASSERT_EQ(want, std::vector<int>(got.begin(), got.end()));
      EXPECT_EQ(y.first_link == CachedRoute::kNotStored, y.link_count > RouteCache::kShortRoute);
      if (bytes.size() <= i) bytes.resize(i + 1, 0);
      bytes[i] = (b = b * 7919 % 100003);
    }
  }
  std::vector<std::uint64_t> want(static_cast<std::size_t>(t.link_count()), 0), got(want.size(), 0);
  std::vector<std::uint64_t> by_all(all.size(), 0);
  for (std::uint32_t i = 0; i < short_only.size(); ++i) {
    const CachedRoute& r = short_only.route(i);
    by_all[all.find(r.src, r.dst)] = i < bytes.size() ? bytes[i] : 0;
  }
  all.add_link_bytes(by_all, want);
  short_only.add_link_bytes(bytes, got);
  EXPECT_EQ(got, want);

  const alg::Schedule s = alg::generate("stragglar", 40, alg::Options{});
  RouteCache fresh(t, LinkLists::short_only);
  const auto a = shared(s, t), c = find_shared_link(s, fresh);
  ASSERT_TRUE(a && c);
  EXPECT_EQ(a->round, c->round);
  EXPECT_EQ(a->link, c->link);
  EXPECT_EQ(a->transfers, c->transfers);
}

}  // namespace
}  // namespace ssim::sim
