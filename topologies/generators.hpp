// Generators of the standard topologies: one parameter struct and one make_* function each.
// Every function validates its parameters (InputError naming the parameter and the allowed
// range) and returns a Topology with `name` and `description` set. GPU ranks come first as
// vertices 0..ranks-1, switches after them.
//
//   Topology t = make_switch({.ranks = 8, .bandwidth = parse_bandwidth("450GB/s"),
//                             .latency = parse_time("2us")});
//   Topology h = make_hierarchical({
//       .nodes = 4, .gpus_per_node = 8,
//       .nvlink_bandwidth = BytesPerSecond{450e9}, .nvlink_latency = Seconds{2e-6},
//       .nic_bandwidth = BytesPerSecond{50e9}, .nic_latency = Seconds{1e-6},
//       .fabric = FabricKind::rail_optimized, .spines = 2,
//       .spine_bandwidth = BytesPerSecond{50e9}, .spine_latency = Seconds{1e-6}});
//
// Latency conventions (the one place they are defined):
// - A latency given for a switch a GPU pair talks through (make_switch, the NVSwitch of
//   make_hierarchical) is the GPU-to-GPU path latency alpha; each of the two links of that path
//   carries half of it.
// - Every other latency is per link, i.e. per hop.
// Bandwidth is always per link and per direction.
#pragma once

#include <string>
#include <vector>

#include "common/units.hpp"
#include "topologies/topology.hpp"

namespace ssim::topo {

// Upper bound on GPUs for every generator (a 65536-rank simulation is already far past the
// intended scale of 16384).
inline constexpr int kMaxGeneratedRanks = 65536;

// `ranks` GPUs, each with an up and a down link to one non-blocking switch (NVSwitch-like).
// Links: class "nvlink", `bandwidth` each, `latency`/2 each, so route(i, j) has 2 links and
// latency == `latency`. ranks in [2, 65536].
struct SwitchParams {
  int ranks = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};
Topology make_switch(const SwitchParams& p);

// A direct link each way between every pair of GPUs; class "direct", latency per link.
// ranks in [2, 1024] (n(n-1) links).
struct FullyConnectedParams {
  int ranks = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};
Topology make_fully_connected(const FullyConnectedParams& p);

// Bidirectional ring: GPU i linked each way to GPU i+1 mod ranks (ranks == 2: one link each
// way); class "ring", latency per link. ranks in [2, 65536].
struct RingParams {
  int ranks = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};
Topology make_ring(const RingParams& p);

// Torus with wrap-around in each dimension. A dimension of size >= 3 is a ring; size 2 gives a
// single link each way between the two coordinates; size 1 gives none. Rank = x + X*(y + Y*z).
// Class "torus", latency per link. Each size >= 1, product in [2, 65536].
struct Torus2dParams {
  int x = 0;
  int y = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};
Topology make_torus2d(const Torus2dParams& p);

struct Torus3dParams {
  int x = 0;
  int y = 0;
  int z = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};
Topology make_torus3d(const Torus3dParams& p);

// A multi-dimensional network as ASTRA-sim's analytical backend builds one (its network YAML:
// `topology`, `npus_count`, `bandwidth`, `latency` per dimension). Rank = c0 + n0 * (c1 + n1 *
// (c2 + ...)): dimension 0 varies fastest. For each dimension d and each group of GPUs that
// differ only in coordinate d, the group is joined by that dimension's building block:
// - ring: GPU c linked each way to c+1 mod n (n == 2: one link each way; n == 1: none);
// - fully_connected: a link each way between every pair of the group;
// - switch: one switch per group, an up and a down link per GPU.
// Every latency is per link (per hop), so two GPUs of a switch group are 2 x latency apart (a
// make_switch latency is the whole GPU-to-GPU path). Link class "dimN". Sizes >= 1, product in
// [2, 65536]; a fully_connected group at most 1024 GPUs; at most 8 dimensions.
enum class BuildingBlock { ring, fully_connected, switch_node };
struct Dimension {
  BuildingBlock block = BuildingBlock::ring;
  int size = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};
struct MultiDimParams {
  std::vector<Dimension> dims;
};
Topology make_multi_dim(const MultiDimParams& p);

// k-ary fat tree of radix-k switches with GPUs as hosts; latency per link.
// - tiers = 2 (leaf-spine): k leaves with k/2 hosts each and k/2 spines, every leaf linked to
//   every spine. Hosts k^2/2. Classes "host", "leaf-spine".
// - tiers = 3 (classic k-pod fat tree): k pods of k/2 edge and k/2 aggregation switches, each
//   edge with k/2 hosts and linked to every aggregation switch of its pod; (k/2)^2 cores, core
//   j*k/2 + i linked to aggregation switch j of every pod. Hosts k^3/4. Classes "host",
//   "edge-agg", "agg-core".
// `oversubscription` (>= 1) divides the bandwidth of the leaf-spine (2 tiers) or edge-agg
// (3 tiers) links, both directions. `ranks` = 0 uses every host; otherwise only hosts
// 0..ranks-1 (in order pod, edge, port) are created, ranks in [2, hosts].
// k even, in [2, 362] for 2 tiers and [2, 64] for 3 tiers (at most 65536 hosts).
struct FatTreeParams {
  int k = 0;
  int tiers = 3;
  BytesPerSecond bandwidth;
  Seconds latency;
  double oversubscription = 1.0;
  int ranks = 0;
};
Topology make_fat_tree(const FatTreeParams& p);
// Hosts of a full fat tree: k^2/2 for 2 tiers, k^3/4 for 3 tiers (no validation).
int fat_tree_hosts(int k, int tiers);

// How the NICs of a hierarchical cluster are joined.
// - leaf_spine: all NICs of a node go to one leaf switch, `nodes_per_leaf` nodes per leaf
//   (leaves = ceil(nodes / nodes_per_leaf)); every leaf linked to every spine.
// - rail_optimized: NIC i of every node goes to rail switch i (gpus_per_node rails); every
//   rail linked to every spine. With no spines, cross-rail traffic crosses NVLink in a node.
enum class FabricKind { leaf_spine, rail_optimized };

// `nodes` nodes of `gpus_per_node` GPUs on one NVSwitch (none when gpus_per_node == 1), plus
// one NIC per GPU into the scale-out fabric. Rank = node * gpus_per_node + local index.
// Links: GPU<->NVSwitch class "nvlink" (nvlink_latency is the GPU-to-GPU latency, half per
// link); GPU<->leaf or rail class "nic" (nic_latency per link); leaf or rail<->spine class
// "fabric" (spine_latency per link). So a same-rail inter-node route costs 2 * nic_latency
// and a route through a spine 2 * nic_latency + 2 * spine_latency.
// nodes in [1, 65536], gpus_per_node in [1, 1024], nodes * gpus_per_node in [2, 65536],
// spines in [0, 4096] (>= 1 for leaf_spine with several leaves), nodes_per_leaf in [1, nodes].
struct HierarchicalParams {
  int nodes = 0;
  int gpus_per_node = 0;
  BytesPerSecond nvlink_bandwidth;
  Seconds nvlink_latency;
  BytesPerSecond nic_bandwidth;
  Seconds nic_latency;
  FabricKind fabric = FabricKind::rail_optimized;
  int spines = 1;
  BytesPerSecond spine_bandwidth;
  Seconds spine_latency;
  int nodes_per_leaf = 1;  // leaf_spine only
};
Topology make_hierarchical(const HierarchicalParams& p);

// `ranks` ranks that share one device (topology.hpp SharedDevice): the simulator runs them on
// the device model, not on links. The graph is a star of the ranks around one vertex "memory"
// (links class "memory", bandwidth memory_bandwidth / copy_factor (memory_bandwidth when the
// factor is 0: a transport without scratch copies), latency copy_latency / 2),
// so that what reads a graph (routes, link counters) sees one copy's uncontended cost.
// ranks in [2, 65536]; memory_bandwidth finite and > 0; operation_bandwidth > 0 (infinity: no
// cap); latencies in [0, 1 s]; factors 0 or in [kMinDeviceFactor, 1000] (a tiny positive
// factor would make the link's bandwidth infinite).
inline constexpr double kMinDeviceFactor = 1e-3;
struct SharedDeviceParams {
  int ranks = 0;
  SharedDevice device;
};
Topology make_shared_device(const SharedDeviceParams& p);

// "leaf_spine" / "rail_optimized" and back (InputError listing both for anything else).
std::string to_string(FabricKind kind);
FabricKind parse_fabric_kind(const std::string& text);

}  // namespace ssim::topo
