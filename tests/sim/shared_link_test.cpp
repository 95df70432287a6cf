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

TEST(SharedLink, RingOnARingIsCleanRhdIsNot) {
  const topo::Topology t = ring_topology(8);
  EXPECT_FALSE(shared(alg::generate("ring", 8, {}), t));
  EXPECT_TRUE(shared(alg::generate("rhd", 8, {}), t));
  // A switch gives every GPU its own up and down link: only ports are shared.
  const topo::Topology sw =
      topo::make_switch({.ranks = 8, .bandwidth = BytesPerSecond{1e11}, .latency = Seconds{1e-6}});
  for (const alg::AlgorithmInfo& info : alg::algorithms())
    EXPECT_FALSE(shared(alg::generate(info.name, 8, {}), sw)) << info.name;
}

}  // namespace
}  // namespace ssim::sim
