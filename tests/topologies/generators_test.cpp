#include "topologies/generators.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <set>

#include "common/error.hpp"

namespace ssim::topo {
namespace {

constexpr BytesPerSecond kBw{100e9};
constexpr Seconds kLat{1e-6};

Seconds us(double v) { return Seconds{v * 1e-6}; }

std::vector<std::string> classes(const Topology& t, const Route& r) {
  std::vector<std::string> out;
  for (int l : r.links) out.push_back(t.link(l).link_class);
  return out;
}

// Names of the vertices a route passes through after the source.
std::vector<std::string> hops(const Topology& t, const Route& r) {
  std::vector<std::string> out;
  for (int l : r.links) out.push_back(t.node(t.link(l).to).name);
  return out;
}

void expect_input_error(const std::function<void()>& f, const std::string& mentions) {
  try {
    f();
    ADD_FAILURE() << "expected InputError mentioning '" << mentions << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

// Shortest distance on a ring of `size` between coordinates a and b.
int wrap(int a, int b, int size) {
  const int d = std::abs(a - b);
  return std::min(d, size - d);
}

// Rank r: link ids 2r (gpu -> switch) and 2r + 1 (switch -> gpu); each carries latency/2, so
// the two-link route has latency 2us exactly (halving and doubling are exact in binary).
TEST(Switch, TwoLinksWithTheGivenPathLatency) {
  const Topology t = make_switch({.ranks = 8, .bandwidth = kBw, .latency = us(2)});
  EXPECT_EQ(t.name, "switch(8)");
  EXPECT_FALSE(t.description.empty());
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(t.node_count(), 9);
  EXPECT_EQ(t.link_count(), 16);
  const Route r = t.route(0, 5);
  EXPECT_EQ(r.links, (std::vector<int>{0, 11}));
  EXPECT_EQ(r.latency.value, 2e-6);
  EXPECT_EQ(r.bandwidth.value, kBw.value);
  EXPECT_EQ(t.link(0).latency.value, 1e-6);
  EXPECT_EQ(classes(t, r), (std::vector<std::string>{"nvlink", "nvlink"}));
}

TEST(FullyConnected, OneLinkPerPair) {
  const Topology t = make_fully_connected({.ranks = 5, .bandwidth = kBw, .latency = kLat});
  EXPECT_EQ(t.link_count(), 20);  // 5 * 4
  for (int s = 0; s < 5; ++s) {
    for (int d = 0; d < 5; ++d) {
      if (s == d) continue;
      const Route r = t.route(s, d);
      ASSERT_EQ(r.links.size(), 1u);
      EXPECT_EQ(t.link(r.links[0]).from, s);
      EXPECT_EQ(t.link(r.links[0]).to, d);
      EXPECT_EQ(r.latency.value, kLat.value);
    }
  }
}

// Ring of 8, link ids: duplex r <-> r+1 gets 2r (r -> r+1) and 2r+1 (back); the 7 <-> 0 pair
// gets 14 (7 -> 0) and 15 (0 -> 7). 0 -> 4 ties both ways round; the first link with the
// lower id (0 -> 1, id 0) wins: 0 -> 1 -> 2 -> 3 -> 4 = ids 0, 2, 4, 6.
TEST(Ring, ShorterWayRoundAndLowestIdOnTies) {
  const Topology t = make_ring({.ranks = 8, .bandwidth = kBw, .latency = kLat});
  EXPECT_EQ(t.name, "ring(8)");
  EXPECT_EQ(t.link_count(), 16);
  EXPECT_EQ(t.route(0, 3).links, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(t.route(0, 5).links, (std::vector<int>{15, 13, 11}));  // 0 -> 7 -> 6 -> 5
  EXPECT_EQ(t.route(0, 4).links, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(t.link(0).link_class, "ring");
  EXPECT_EQ(make_ring({.ranks = 2, .bandwidth = kBw, .latency = kLat}).link_count(), 2);
  EXPECT_EQ(make_ring({.ranks = 3, .bandwidth = kBw, .latency = kLat}).link_count(), 6);
}

TEST(Torus, HopCountsAreWrappedManhattanDistances) {
  const Topology t2 = make_torus2d({.x = 4, .y = 4, .bandwidth = kBw, .latency = kLat});
  EXPECT_EQ(t2.name, "torus2d(4x4)");
  EXPECT_EQ(t2.link_count(), 64);  // 16 GPUs x 2 dimensions x 2 directions
  for (int s = 0; s < 16; ++s) {
    for (int d = 0; d < 16; ++d) {
      if (s == d) continue;
      const int expect = wrap(s % 4, d % 4, 4) + wrap(s / 4, d / 4, 4);
      EXPECT_EQ(static_cast<int>(t2.route(s, d).links.size()), expect) << s << "->" << d;
    }
  }
  const Topology t3 = make_torus3d({.x = 3, .y = 4, .z = 5, .bandwidth = kBw, .latency = kLat});
  for (int s = 0; s < 60; s += 7) {
    for (int d = 0; d < 60; ++d) {
      if (s == d) continue;
      const int expect =
          wrap(s % 3, d % 3, 3) + wrap(s / 3 % 4, d / 3 % 4, 4) + wrap(s / 12, d / 12, 5);
      const Route r = t3.route(s, d);
      EXPECT_EQ(static_cast<int>(r.links.size()), expect) << s << "->" << d;
      EXPECT_DOUBLE_EQ(r.latency.value, expect * kLat.value);
    }
  }
}

// Size 2: one duplex link per pair, not two; size 1: no links.
// 2x3: x pairs 3 duplex + y rings 2 x 3 duplex = 9 duplex = 18 links.
// 1x4: just a ring of 4 = 8 links. 2x2x2: 3 dimensions x 4 duplex = 24 links, and the hop
// count is the number of differing coordinates.
TEST(Torus, SmallDimensions) {
  EXPECT_EQ(make_torus2d({.x = 2, .y = 3, .bandwidth = kBw, .latency = kLat}).link_count(), 18);
  EXPECT_EQ(make_torus2d({.x = 1, .y = 4, .bandwidth = kBw, .latency = kLat}).link_count(), 8);
  const Topology cube = make_torus3d({.x = 2, .y = 2, .z = 2, .bandwidth = kBw, .latency = kLat});
  EXPECT_EQ(cube.link_count(), 24);
  for (int d = 1; d < 8; ++d) {
    EXPECT_EQ(static_cast<int>(cube.route(0, d).links.size()),
              __builtin_popcount(static_cast<unsigned>(d)));
  }
}

// k = 4, 3 tiers: 16 hosts, 4 per pod, 2 per edge switch; 8 edge + 8 agg + 4 core switches;
// 16 host + 16 edge-agg + 16 agg-core duplex links = 96 links.
TEST(FatTree, ThreeTierCountsAndRoutes) {
  const Topology t = make_fat_tree({.k = 4, .tiers = 3, .bandwidth = kBw, .latency = kLat});
  EXPECT_EQ(fat_tree_hosts(4, 3), 16);
  EXPECT_EQ(t.gpu_count(), 16);
  EXPECT_EQ(t.node_count(), 36);
  EXPECT_EQ(t.link_count(), 96);
  EXPECT_EQ(t.route(0, 1).links.size(), 2u);  // same edge
  EXPECT_EQ(t.route(0, 2).links.size(), 4u);  // same pod, other edge
  const Route cross = t.route(0, 4);          // pod 0 -> pod 1
  EXPECT_EQ(classes(t, cross), (std::vector<std::string>{"host", "edge-agg", "agg-core", "agg-core",
                                                         "edge-agg", "host"}));
  EXPECT_DOUBLE_EQ(cross.latency.value, 6 * kLat.value);
  // Lowest ids: the first aggregation switch of the pod, then its first core.
  EXPECT_EQ(hops(t, cross),
            (std::vector<std::string>{"edge0.0", "agg0.0", "core0", "agg1.0", "edge1.0", "gpu4"}));
}

// Cross-pod from host 0: 2 aggregation switches x 2 cores each = 4 equal paths.
TEST(FatTree, EcmpSpreadsOverTheFourCorePaths) {
  Topology t = make_fat_tree({.k = 4, .tiers = 3, .bandwidth = kBw, .latency = kLat});
  const Route fixed = t.route(0, 12);
  for (std::uint64_t h = 0; h < 64; ++h) EXPECT_EQ(t.route(0, 12, h).links, fixed.links);
  t.set_ecmp(true);
  std::set<std::vector<int>> paths;
  for (std::uint64_t h = 0; h < 256; ++h) {
    const Route r = t.route(0, 12, h);
    EXPECT_EQ(r.links.size(), 6u);
    EXPECT_EQ(t.route(0, 12, h).links, r.links);
    paths.insert(r.links);
  }
  EXPECT_EQ(paths.size(), 4u);
}

// k = 4, 2 tiers: 4 leaves x 2 hosts = 8 hosts, 2 spines; 8 + 8 duplex links.
// Oversubscription 2 halves the leaf-spine links, so a cross-leaf route's bottleneck is bw/2.
TEST(FatTree, TwoTiersWithOversubscription) {
  const Topology t =
      make_fat_tree({.k = 4, .tiers = 2, .bandwidth = kBw, .latency = kLat, .oversubscription = 2});
  EXPECT_EQ(fat_tree_hosts(4, 2), 8);
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(t.node_count(), 14);
  EXPECT_EQ(t.link_count(), 32);
  const Route same_leaf = t.route(0, 1);
  EXPECT_EQ(same_leaf.links.size(), 2u);
  EXPECT_EQ(same_leaf.bandwidth.value, kBw.value);
  const Route cross = t.route(0, 2);
  EXPECT_EQ(classes(t, cross),
            (std::vector<std::string>{"host", "leaf-spine", "leaf-spine", "host"}));
  EXPECT_EQ(cross.bandwidth.value, kBw.value / 2);
}

TEST(FatTree, FirstRanksOnly) {
  const Topology t =
      make_fat_tree({.k = 4, .tiers = 3, .bandwidth = kBw, .latency = kLat, .ranks = 10});
  EXPECT_EQ(t.gpu_count(), 10);
  EXPECT_EQ(t.node_count(), 30);
  EXPECT_EQ(t.name, "fat_tree(k=4,tiers=3,ranks=10)");
  EXPECT_EQ(t.route(0, 9).links.size(), 6u);  // host 9 is in pod 2
}

// Rail-optimised, 2 nodes x 4 GPUs, 2 spines; NVLink path 1us (0.5us per link), NIC 1us and
// spine 0.25us per link.
//   0 -> 3 (same node): NVSwitch 1us beats the fabric 1 + 0.25 + 0.25 + 1 = 2.5us.
//   0 -> 4 (node 1, same rail): rail0 directly, 2 NIC links, 2us.
//   0 -> 5 (node 1, rail 1): via a spine 2.5us beats NVLink + rail (0.5+0.5+1+1 = 3us);
//   the two spines tie and spine0's link has the lower id.
HierarchicalParams small_cluster(FabricKind fabric) {
  return {.nodes = 2,
          .gpus_per_node = 4,
          .nvlink_bandwidth = BytesPerSecond{450e9},
          .nvlink_latency = us(1),
          .nic_bandwidth = BytesPerSecond{50e9},
          .nic_latency = us(1),
          .fabric = fabric,
          .spines = 2,
          .spine_bandwidth = BytesPerSecond{25e9},
          .spine_latency = us(0.25)};
}

TEST(Hierarchical, RailOptimizedRoutes) {
  Topology t = make_hierarchical(small_cluster(FabricKind::rail_optimized));
  EXPECT_EQ(t.name, "hierarchical(2x4,rail_optimized)");
  EXPECT_EQ(t.node_count(), 16);  // 8 GPUs, 2 NVSwitches, 4 rails, 2 spines
  EXPECT_EQ(t.link_count(), 48);  // 8 nvlink + 8 nic + 4 x 2 fabric duplex links
  const Route intra = t.route(0, 3);
  EXPECT_EQ(hops(t, intra), (std::vector<std::string>{"node0.nvswitch", "node0.gpu3"}));
  EXPECT_EQ(intra.latency.value, 1e-6);
  EXPECT_EQ(intra.bandwidth.value, 450e9);
  const Route rail = t.route(0, 4);
  EXPECT_EQ(hops(t, rail), (std::vector<std::string>{"rail0", "node1.gpu0"}));
  EXPECT_EQ(classes(t, rail), (std::vector<std::string>{"nic", "nic"}));
  EXPECT_DOUBLE_EQ(rail.latency.value, 2e-6);
  const Route cross = t.route(0, 5);
  EXPECT_EQ(hops(t, cross), (std::vector<std::string>{"rail0", "spine0", "rail1", "node1.gpu1"}));
  EXPECT_EQ(classes(t, cross), (std::vector<std::string>{"nic", "fabric", "fabric", "nic"}));
  EXPECT_DOUBLE_EQ(cross.latency.value, 2.5e-6);
  EXPECT_EQ(cross.bandwidth.value, 25e9);
  t.set_ecmp(true);
  std::set<std::string> spines;
  for (std::uint64_t h = 0; h < 64; ++h) spines.insert(hops(t, t.route(0, 5, h))[1]);
  EXPECT_EQ(spines, (std::set<std::string>{"spine0", "spine1"}));
}

// Leaf-spine, 4 nodes x 2 GPUs, 2 nodes per leaf: nodes 0 and 1 share leaf0.
TEST(Hierarchical, LeafSpineRoutes) {
  HierarchicalParams p = small_cluster(FabricKind::leaf_spine);
  p.nodes = 4;
  p.gpus_per_node = 2;
  p.nodes_per_leaf = 2;
  const Topology t = make_hierarchical(p);
  EXPECT_EQ(t.node_count(), 16);  // 8 GPUs, 4 NVSwitches, 2 leaves, 2 spines
  EXPECT_EQ(hops(t, t.route(0, 1)), (std::vector<std::string>{"node0.nvswitch", "node0.gpu1"}));
  EXPECT_EQ(hops(t, t.route(0, 2)), (std::vector<std::string>{"leaf0", "node1.gpu0"}));
  EXPECT_EQ(hops(t, t.route(0, 4)),
            (std::vector<std::string>{"leaf0", "spine0", "leaf1", "node2.gpu0"}));
}

TEST(Hierarchical, OneGpuPerNodeHasNoNvswitch) {
  HierarchicalParams p = small_cluster(FabricKind::rail_optimized);
  p.nodes = 4;
  p.gpus_per_node = 1;
  p.nvlink_bandwidth = BytesPerSecond{0};  // unused, so not validated
  const Topology t = make_hierarchical(p);
  EXPECT_EQ(t.node_count(), 4 + 1 + 2);
  EXPECT_EQ(hops(t, t.route(0, 3)), (std::vector<std::string>{"rail0", "node3.gpu0"}));
}

TEST(Generators, InvalidParametersNameTheParameter) {
  expect_input_error([] { make_switch({.ranks = 1, .bandwidth = kBw, .latency = kLat}); }, "ranks");
  expect_input_error(
      [] { make_switch({.ranks = 4, .bandwidth = BytesPerSecond{0}, .latency = kLat}); },
      "bandwidth");
  expect_input_error([] { make_switch({.ranks = 4, .bandwidth = kBw, .latency = Seconds{-1}}); },
                     "latency");
  expect_input_error(
      [] { make_fully_connected({.ranks = 1025, .bandwidth = kBw, .latency = kLat}); }, "ranks");
  expect_input_error([] { make_ring({.ranks = 0, .bandwidth = kBw, .latency = kLat}); }, "ranks");
  expect_input_error([] { make_torus2d({.x = 0, .y = 4, .bandwidth = kBw, .latency = kLat}); },
                     "x");
  expect_input_error([] { make_torus2d({.x = 1, .y = 1, .bandwidth = kBw, .latency = kLat}); },
                     "product");
  expect_input_error(
      [] { make_torus3d({.x = 2, .y = 2, .z = 0, .bandwidth = kBw, .latency = kLat}); }, "z");
  expect_input_error(
      [] { make_torus3d({.x = 64, .y = 64, .z = 64, .bandwidth = kBw, .latency = kLat}); },
      "product");
  expect_input_error([] { make_fat_tree({.k = 3, .tiers = 3, .bandwidth = kBw, .latency = kLat}); },
                     "k must");
  expect_input_error(
      [] { make_fat_tree({.k = 66, .tiers = 3, .bandwidth = kBw, .latency = kLat}); }, "k must");
  expect_input_error([] { make_fat_tree({.k = 4, .tiers = 4, .bandwidth = kBw, .latency = kLat}); },
                     "tiers");
  expect_input_error(
      [] {
        make_fat_tree(
            {.k = 4, .tiers = 2, .bandwidth = kBw, .latency = kLat, .oversubscription = 0.5});
      },
      "oversubscription");
  expect_input_error(
      [] { make_fat_tree({.k = 4, .tiers = 3, .bandwidth = kBw, .latency = kLat, .ranks = 17}); },
      "ranks");
  auto hier = [](auto&& edit) {
    return [edit] {
      HierarchicalParams p = small_cluster(FabricKind::rail_optimized);
      edit(p);
      make_hierarchical(p);
    };
  };
  expect_input_error(hier([](HierarchicalParams& p) { p.nodes = 0; }), "nodes");
  expect_input_error(hier([](HierarchicalParams& p) { p.gpus_per_node = 0; }), "gpus_per_node");
  expect_input_error(hier([](HierarchicalParams& p) { p.nodes = 1, p.gpus_per_node = 1; }),
                     "nodes * gpus_per_node");
  expect_input_error(hier([](HierarchicalParams& p) { p.nvlink_bandwidth = BytesPerSecond{-1}; }),
                     "nvlink_bandwidth");
  expect_input_error(hier([](HierarchicalParams& p) { p.nvlink_latency = Seconds{5}; }),
                     "nvlink_latency");
  expect_input_error(hier([](HierarchicalParams& p) { p.nic_bandwidth = BytesPerSecond{0}; }),
                     "nic_bandwidth");
  expect_input_error(hier([](HierarchicalParams& p) { p.nic_latency = Seconds{-1}; }),
                     "nic_latency");
  expect_input_error(hier([](HierarchicalParams& p) { p.spines = -1; }), "spines");
  expect_input_error(hier([](HierarchicalParams& p) { p.spine_bandwidth = BytesPerSecond{0}; }),
                     "spine_bandwidth");
  expect_input_error(
      hier([](HierarchicalParams& p) { p.fabric = FabricKind::leaf_spine, p.nodes_per_leaf = 3; }),
      "nodes_per_leaf");
  expect_input_error(
      hier([](HierarchicalParams& p) { p.fabric = FabricKind::leaf_spine, p.spines = 0; }),
      "spines");
  expect_input_error([] { parse_fabric_kind("clos"); }, "leaf_spine or rail_optimized");
  EXPECT_EQ(parse_fabric_kind("leaf_spine"), FabricKind::leaf_spine);
  EXPECT_EQ(to_string(FabricKind::rail_optimized), "rail_optimized");
}

TEST(Generators, SameParametersSameTopologyAndRoutes) {
  const Topology a = make_hierarchical(small_cluster(FabricKind::rail_optimized));
  const Topology b = make_hierarchical(small_cluster(FabricKind::rail_optimized));
  EXPECT_EQ(a.description, b.description);
  ASSERT_EQ(a.link_count(), b.link_count());
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      EXPECT_EQ(a.route(s, d).links, b.route(s, d).links);
    }
  }
}

// ASTRA-sim's multi-dimensional network: Ring(4) x Switch(2) x FullyConnected(3), dimension 0
// fastest. Latencies are per hop, so a switch pair is two latencies apart; a route between GPUs
// that differ in two dimensions takes the hops of both.
TEST(MultiDim, BuildingBlocksPerDimension) {
  const Topology t = make_multi_dim(
      {.dims = {{BuildingBlock::ring, 4, BytesPerSecond{50e9}, us(1)},
                {BuildingBlock::switch_node, 2, BytesPerSecond{25e9}, us(10)},
                {BuildingBlock::fully_connected, 3, BytesPerSecond{10e9}, us(100)}}});
  EXPECT_EQ(t.gpu_count(), 24);
  // links: ring 6 groups x 4 duplex; switch 12 groups x 2 duplex; fully connected 8 groups x 3.
  EXPECT_EQ(t.link_count(), 2 * (6 * 4 + 12 * 2 + 8 * 3));
  EXPECT_EQ(t.node_count(), 24 + 12);
  const Route ring = t.route(0, 2);  // c0 0 -> 2: two ring hops either way (lowest ids)
  EXPECT_EQ(ring.links.size(), 2u);
  EXPECT_NEAR(ring.latency.value, 2e-6, 1e-15);
  EXPECT_DOUBLE_EQ(ring.bandwidth.value, 50e9);
  const Route sw = t.route(1, 5);  // c1 0 -> 1 through that group's switch
  EXPECT_EQ(classes(t, sw), (std::vector<std::string>{"dim1", "dim1"}));
  EXPECT_NEAR(sw.latency.value, 20e-6, 1e-15);
  EXPECT_DOUBLE_EQ(sw.bandwidth.value, 25e9);
  const Route fc = t.route(3, 19);  // c2 0 -> 2: one direct link
  EXPECT_EQ(classes(t, fc), (std::vector<std::string>{"dim2"}));
  EXPECT_NEAR(fc.latency.value, 100e-6, 1e-15);
  const Route both = t.route(0, 6);  // (0,0,0) -> (2,1,0): 2 ring hops + the switch
  EXPECT_NEAR(both.latency.value, 22e-6, 1e-15);
  EXPECT_DOUBLE_EQ(both.bandwidth.value, 25e9);
  // size 2 rings have one duplex link; size 1 dimensions none.
  const Topology two = make_multi_dim(
      {.dims = {{BuildingBlock::ring, 2, kBw, kLat}, {BuildingBlock::switch_node, 1, kBw, kLat}}});
  EXPECT_EQ(two.link_count(), 2);
  EXPECT_EQ(two.node_count(), 2);
  EXPECT_THROW(make_multi_dim({.dims = {{BuildingBlock::ring, 1, kBw, kLat}}}), InputError);
  EXPECT_THROW(make_multi_dim({.dims = {}}), InputError);
  EXPECT_THROW(make_multi_dim({.dims = {{BuildingBlock::ring, 4, BytesPerSecond{0}, kLat}}}),
               InputError);
  EXPECT_THROW(make_multi_dim({.dims = {{BuildingBlock::fully_connected, 1025, kBw, kLat}}}),
               InputError);
}

}  // namespace
}  // namespace ssim::topo
