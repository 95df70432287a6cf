// What NCCL's protocols cost in the simulator (the protocol itself is data,
// algorithms/protocol.hpp: a schedule's `proto` option). Only a schedule that names its protocol
// (the option is present: `nccl` always, `nccl_ring`/`nccl_tree` when given) runs as an NCCL
// kernel and pays these costs; any other schedule is costed by its routes alone, bit for bit as
// before. Both network models apply them to every point-to-point transfer, through
// time_transfer (alpha-beta, sim/transfer_timing.hpp) and the flow model's start
// (sim/network.cpp), and delay every rank's first transfer by the launch:
//
//   launch      seconds from a rank's arrival to its first transfer: NCCL's base latency of the
//               collective (a kernel launch and its setup, paid once, not per hop).
//   latency     the route's latency times the protocol's factor for the route's class: within a
//               node (both ranks in one node, or a topology without nodes) or across nodes. The
//               topology's latencies are Simple's, so Simple's factors are 1. Pipelined, at
//               least NCCL's per-step hardware latency of the class (step): a step of NCCL's
//               kernel costs what NCCL measures one to cost, however short the route. An NVLS
//               kernel (the schedule nvls or nvls_tree, or nccl algo=nvls/nvls_tree) takes
//               NVLS's: an in-network reduction or multicast at least 12.5 us, half of NVLS's
//               25 us step (the even split is an assumption), a network step 20.9 us
//               (NVLS_TREE's).
//   wire        wire bytes per data byte: a transfer of m data bytes moves wire * m bytes at the
//               route's bandwidth (flow: shares its links as wire * m bytes).
//   efficiency  within a node, the fraction of the route's bandwidth the kernel's copies reach
//               (NVLink moved by SMs): a transfer within a node moves wire / efficiency bytes.
//   channel     a cap on one transfer's data rate (one channel's, since a channel of an NCCL
//               schedule is one transfer per step); 0: none. The protocol's own (LL128's 36.7
//               GB/s) and the machine's (the executor, cap_channel): a
//               channel moves at most NCCL's graph's per-channel bandwidth on the wire
//               (sim::nccl_channel_bandwidth) and LL's C channels together at most llMaxBw
//               (sim::nccl_ll_max_bandwidth); NCCL's Ring kernel only (not NVLS, Tree, CollNet
//               nor NCCL's send/recv). The
//               alpha-beta model's port serves a rank's C channels in turn: its cap is C
//               channels' (ProtocolTiming::scale_cap).
//
// So a transfer of m bytes on a route of latency a and bandwidth b takes, in the alpha-beta model,
//   f a + m max(w / b, 1 / cap),   w = wire / efficiency within a node, wire across nodes,
// and the flow model moves w * m bytes after f a at its max-min share, capped at w * cap
// (pipelined: moves them at once and lands f a after its last byte left).
//
// Pipelined (ProtocolTiming::pipelined, from NetworkConfig::pipelined_kernels, `network: {steps:
// pipelined}`, the default; `steps: per_round` turns it off; an NCCL collective kernel's only,
// not NCCL's send/recv under a network-wide protocol, whose rounds are groups of their own), an
// NCCL kernel's steps overlap their latencies (NCCL keeps up to NCCL_STEPS = 8 steps in flight
// per connection; tuning.cc charges a step's hardware latency per
// step of the pipeline's depth, not per chunk looped through). Both models run it so: the
// latency occupies no port or link (a sender is free once its bytes have left: alpha-beta
// m max(w / b, 1 / cap) after the start, flow when its flow has moved them; the data lands f a
// later), there is no per-round ready time, and a transfer starts once the chunks it sends have
// landed at the sender (every write of an earlier round into them), the receiver's kernel has
// started and its sender is free, which the two models read differently:
//   flow        per connection. NCCL's channels are independent (a CUDA block each, each with
//               its own connection to each peer), so a transfer waits for the one before it on
//               its connection to have left, not for the rank's other sends. A connection is a
//               channel's link from one rank to another: the k-th transfer from src to dst in a
//               round continues the k-th one of the latest earlier round with one (a round's
//               transfers run at once, so several between two ranks are several channels); an
//               in-network reduction continues the last one with the same members and
//               receivers (NVLS: each rank's reduce of its chunk and its multicast are streams
//               of their own). A rank takes at most 8 rounds (NCCL_STEPS) ahead of its oldest
//               round with a send not yet left. What the channels share, their links, is shared
//               max-min as any flows are; in-network reductions are flows of their own.
//   alpha-beta  per rank. Links are not shared there; what keeps a rank's C channels from
//               each taking the route's full bandwidth is its one send port, which serves its
//               sends one at a time in schedule order (so a channel's send waits for the
//               rank's earlier sends, whichever channel); the receive port takes its arrivals
//               in schedule order likewise (the arrival window [start + latency, end]). A
//               round's in-network reductions through one switch stay one batch that shares the
//               links, so the batch waits for the data of all of them (sim/dataflow_pass.cpp).
// A ring, whose every step forwards the last one's data, gains nothing but the first step of
// each further loop; a pipelined tree's segments pay their latencies along the tree's depth
// instead of once per segment; NVLS's and nvls_tree's slices overlap theirs in the flow model,
// none in the alpha-beta model (the batch).
// Defaults (nccl_default_protocols) are NCCL's own figures for Hopper (NVIDIA/nccl
// src/graph/tuning.cc, ncclTunerConstantsDefaults; src/graph/topo.h): latency factors are the
// ratios of its per-step hardware latencies hwLat[NVLINK or NET][Ring][p] to Simple's (LL 0.6/3.4
// within a node, 2.7/14 across; LL128 1.9/3.4 and 4.0/14), the steps those latencies themselves
// (Simple 3.4 us and 14 us, LL 0.6 and 2.7, LL128 1.9 and 4.0), launches its Ring base latencies
// baseLat[Ring][p] (LL 6.6 us, LL128 14 us, Simple 8.4 us), wire 8/4 for LL (4 data bytes per
// 8-byte line) and 128/120 for LL128 (120 per 128-byte line), LL128's per-channel cap 36.7 GB/s
// (perChMaxRingLL128Bws, Hopper), and the NVLink efficiency 20.6/25 = 0.824: NCCL counts 20.6
// GB/s per NVLink4 link on Hopper (SM90_NVLINK_BW) against the link's 25 GB/s each way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "algorithms/protocol.hpp"

namespace ssim::sim {

struct ProtocolCost {
  double latency_intra = 1;      // factor on a route's latency within a node
  double latency_inter = 1;      // ... across nodes
  double wire = 1;               // wire bytes per data byte, >= 1
  double channel_bandwidth = 0;  // bytes per second of one transfer's data; 0: no cap
  double efficiency_intra = 1;   // fraction of a route's bandwidth reached within a node, (0, 1]
  double launch = 0;             // seconds from arrival to a rank's first transfer
  // NCCL's per-step hardware latency (seconds) within a node and across nodes: the least a
  // step's latency is (see the header comment); 0: none.
  double step_intra = 0;
  double step_inter = 0;
};

struct ProtocolTable {
  ProtocolCost simple;
  ProtocolCost ll;
  ProtocolCost ll128;
  const ProtocolCost& of(alg::Protocol p) const {
    return p == alg::Protocol::ll ? ll : p == alg::Protocol::ll128 ? ll128 : simple;
  }
};

// NCCL's figures for Hopper GPUs (see the header comment).
inline constexpr double kNcclNvlinkEfficiency = 20.6 / 25.0;
inline ProtocolTable nccl_default_protocols() {
  ProtocolTable t;
  t.simple = {1, 1, 1, 0, kNcclNvlinkEfficiency, 8.4e-6, 3.4e-6, 14.0e-6};
  t.ll = {0.6 / 3.4, 2.7 / 14.0, 8.0 / 4.0, 0, kNcclNvlinkEfficiency, 6.6e-6, 0.6e-6, 2.7e-6};
  t.ll128 = {1.9 / 3.4,   4.0 / 14.0, 128.0 / 120.0, 36.7e9, kNcclNvlinkEfficiency,
             14.0e-6, 1.9e-6, 4.0e-6};
  return t;
}
// NCCL's per-step hardware latencies of NVLS on Hopper (tuning.cc, hwLat[NVLINK][NVLS][Simple]
// = 25 us, one NVLS step: a chunk's reduction in the switch and its multicast, taken here as
// half each; hwLat[NET][NVLS_TREE][Simple] = 20.9 us, a network step of NVLS_TREE).
inline constexpr double kNcclNvlsStep = 25e-6;
inline constexpr double kNcclNvlsTreeNetStep = 20.9e-6;

// One run's protocol, resolved for the topology: what time_transfer and the flow model apply.
// The default (inactive) changes nothing, bit for bit.
struct ProtocolTiming {
  bool active = false;
  // NCCL's steps overlap their latencies and cost at least NCCL's step latencies (the header
  // comment); set from NetworkConfig::pipelined_kernels (off: the per-round rule, as before).
  bool pipelined = false;
  double latency_intra = 1;
  double latency_inter = 1;
  double wire_intra = 1;   // wire bytes per data byte within a node (wire / efficiency)
  double wire_inter = 1;   // ... across nodes
  double inverse_cap = 0;  // seconds per data byte of one transfer at its cap; 0: none
  double channel_bandwidth = 0;  // data bytes per second of one transfer's cap; 0: none
  double launch = 0;             // seconds from arrival to a rank's first transfer
  double step_intra = 0;          // a point-to-point step's least latency within a node
  double step_inter = 0;          // ... across nodes
  double switch_step = 0;         // an in-network reduction's or multicast's least latency
  // A switch's reduction throughput under this kernel at most (bytes per second of data
  // reduced; 0: the switch's own): NCCL's NVLS_TREE kernel moves at most its heads x
  // perChMaxNVLSTreeBw of bus bandwidth (sim::nccl_nvls_tree_bandwidth), and every byte it
  // reduces passes its switch once, so the switch reduces at most that algorithm bandwidth.
  double switch_bandwidth = 0;
  // The reduction throughput of a switch whose own is `bandwidth` (bytes per second).
  double reduction_bandwidth(double bandwidth) const {
    return switch_bandwidth > 0 ? std::min(bandwidth, switch_bandwidth) : bandwidth;
  }
  std::size_t gpus_per_node = 0;  // 0: one node (every route within it)

  static ProtocolTiming of(const ProtocolCost& c, int gpus_per_node) {
    ProtocolTiming t;
    t.active = true;
    t.latency_intra = c.latency_intra;
    t.latency_inter = c.latency_inter;
    t.wire_intra = c.wire / c.efficiency_intra;
    t.wire_inter = c.wire;
    if (c.channel_bandwidth > 0) {
      t.inverse_cap = 1.0 / c.channel_bandwidth;
      t.channel_bandwidth = c.channel_bandwidth;
    }
    t.launch = c.launch;
    t.step_intra = c.step_intra;
    t.step_inter = c.step_inter;
    t.gpus_per_node = gpus_per_node > 0 ? static_cast<std::size_t>(gpus_per_node) : 0;
    return t;
  }
  // Caps each transfer (one channel's) at `wire_rate` wire bytes per second on top of the
  // protocol's own cap: the data moves at most wire_rate / wire (NCCL's model: a channel moves
  // the graph's per-channel bandwidth, LL half of it, LL128 120/128 of it).
  void cap_channel(double wire_rate, double wire) {
    if (!(wire_rate > 0) || !std::isfinite(wire_rate)) return;
    const double data = wire_rate / wire;
    if (channel_bandwidth > 0 && channel_bandwidth <= data) return;
    channel_bandwidth = data;
    inverse_cap = 1.0 / data;
  }
  // Multiplies the cap (if any) by `factor`: the alpha-beta model's port, which serves a
  // rank's `factor` channels in turn.
  void scale_cap(double factor) {
    if (channel_bandwidth <= 0) return;
    channel_bandwidth *= factor;
    inverse_cap = 1.0 / channel_bandwidth;
  }
  bool across_nodes(std::size_t src, std::size_t dst) const {
    return gpus_per_node > 0 && src / gpus_per_node != dst / gpus_per_node;
  }
  double latency(double route_latency, std::size_t src, std::size_t dst) const {
    if (!pipelined) return route_latency * (across_nodes(src, dst) ? latency_inter : latency_intra);
    return across_nodes(src, dst) ? std::max(route_latency * latency_inter, step_inter)
                                  : std::max(route_latency * latency_intra, step_intra);
  }
  // An in-network reduction's or multicast's latency (its links' and switch's) under the kernel.
  double switch_latency(double latency) const { return std::max(latency, switch_step); }
  double wire(std::size_t src, std::size_t dst) const {
    return across_nodes(src, dst) ? wire_inter : wire_intra;
  }
  double inverse_bandwidth(double route_inverse, std::size_t src, std::size_t dst) const {
    return std::max(route_inverse * wire(src, dst), inverse_cap);
  }
  // The cap of one transfer in wire bytes per second (infinity: none).
  double cap(std::size_t src, std::size_t dst) const {
    return channel_bandwidth > 0 ? channel_bandwidth * wire(src, dst)
                                 : std::numeric_limits<double>::infinity();
  }
};

}  // namespace ssim::sim
