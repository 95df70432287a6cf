// What NCCL's protocols cost in the simulator (the protocol itself is data,
// algorithms/protocol.hpp: a schedule's `proto` option). Both network models apply it to every
// point-to-point transfer of a schedule, through time_transfer (alpha-beta,
// sim/transfer_timing.hpp) and the flow model's start (sim/network.cpp):
//
//   latency   the route's latency times the protocol's factor for the route's class: within a
//             node (both ranks in one node, or a topology without nodes) or across nodes. The
//             topology's latencies are Simple's, so Simple's factors are 1.
//   wire      wire bytes per data byte: a transfer of m data bytes moves wire * m bytes at the
//             route's bandwidth (flow: shares its links as wire * m bytes).
//   channel   a cap on one transfer's data rate (one channel's, since a channel of an NCCL
//             schedule is one transfer per step); 0: none.
//
// So a transfer of m bytes on a route of latency a and bandwidth b takes, in the alpha-beta model,
//   f a + m max(wire / b, 1 / cap)
// and the flow model moves wire * m bytes after f a at its max-min share, capped at wire * cap.
//
// Defaults (nccl_default_protocols) are NCCL's own figures for Hopper (NVIDIA/nccl
// src/graph/tuning.cc, ncclTunerConstantsDefaults): latency factors are the ratios of its
// per-step hardware latencies hwLat[NVLINK or NET][Ring][p] to Simple's (LL 0.6/3.4 within a node,
// 2.7/14 across; LL128 1.9/3.4 and 4.0/14), wire 8/4 for LL (4 data bytes per 8-byte line) and
// 128/120 for LL128 (120 per 128-byte line), and LL128's per-channel cap 36.7 GB/s
// (perChMaxRingLL128Bws, Hopper). Simple has no cap here: its channel's bandwidth is the links'.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>

#include "algorithms/protocol.hpp"

namespace ssim::sim {

struct ProtocolCost {
  double latency_intra = 1;      // factor on a route's latency within a node
  double latency_inter = 1;      // ... across nodes
  double wire = 1;               // wire bytes per data byte, >= 1
  double channel_bandwidth = 0;  // bytes per second of one transfer's data; 0: no cap
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
inline ProtocolTable nccl_default_protocols() {
  ProtocolTable t;
  t.ll = {0.6 / 3.4, 2.7 / 14.0, 8.0 / 4.0, 0};
  t.ll128 = {1.9 / 3.4, 4.0 / 14.0, 128.0 / 120.0, 36.7e9};
  return t;
}

// One run's protocol, resolved for the topology: what time_transfer and the flow model apply.
// The default (inactive) changes nothing, bit for bit.
struct ProtocolTiming {
  bool active = false;
  double latency_intra = 1;
  double latency_inter = 1;
  double wire = 1;
  double inverse_cap = 0;  // seconds per data byte of one transfer at its cap; 0: none
  double cap = std::numeric_limits<double>::infinity();  // wire bytes per second of one transfer
  std::size_t gpus_per_node = 0;                         // 0: one node (every route within it)

  static ProtocolTiming of(const ProtocolCost& c, int gpus_per_node) {
    ProtocolTiming t;
    t.active =
        c.latency_intra != 1 || c.latency_inter != 1 || c.wire != 1 || c.channel_bandwidth > 0;
    t.latency_intra = c.latency_intra;
    t.latency_inter = c.latency_inter;
    t.wire = c.wire;
    if (c.channel_bandwidth > 0) {
      t.inverse_cap = 1.0 / c.channel_bandwidth;
      t.cap = c.channel_bandwidth * c.wire;
    }
    t.gpus_per_node = gpus_per_node > 0 ? static_cast<std::size_t>(gpus_per_node) : 0;
    return t;
  }
  bool across_nodes(std::size_t src, std::size_t dst) const {
    return gpus_per_node > 0 && src / gpus_per_node != dst / gpus_per_node;
  }
  double latency(double route_latency, std::size_t src, std::size_t dst) const {
    return route_latency * (across_nodes(src, dst) ? latency_inter : latency_intra);
  }
  double inverse_bandwidth(double route_inverse) const {
    return std::max(route_inverse * wire, inverse_cap);
  }
};

}  // namespace ssim::sim
