// NCCL's tuner (see nccl_tuner.hpp). Constants: NVIDIA/nccl src/graph/tuning.cc
// (ncclTunerConstantsDefaults, Hopper rows; the LL row for several nodes is Intel's) and
// src/enqueue.cc, src/include/{comm,device}.h (thread counts and thresholds).
#include "sim/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "algorithms/generators.hpp"
#include "algorithms/registry.hpp"
#include "common/error.hpp"

namespace ssim::sim {
namespace {

enum Algo { kTree = 0, kRing = 1, kNvls = 2, kNvlsTree = 3, kCollnetDirect = 4, kCollnetChain = 5 };
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;  // NCCL's protocol order

// baseLatencies and hwLatencies [NVLINK, NET] for Tree, Ring, NVLS, NVLS Tree, CollNet Direct,
// CollNet Chain (us; CollNet: Simple only, base latency 0).
constexpr double kBaseLat[6][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0},
                                   {0, 0, 0},        {0, 0, 0},        {0, 0, 0}};
constexpr double kHwLatNvlink[6][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25},
                                       {0, 0, 25},       {0, 0, 3.7},     {0, 0, 2.8}};
constexpr double kHwLatNet[6][3] = {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18},
                                    {0, 0, 20.9},   {0, 0, 31},       {0, 0, 30}};
// Per node-count index (1, 2, >2 nodes), Hopper: llMaxBws (Hopper one node; Intel hosts across
// nodes), perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws.
constexpr double kLlMaxBw[3] = {141.0, 39.0, 20.4};
constexpr double kPerChRingLL128[3] = {36.7, 36.7, 36.7};
constexpr double kPerChTreeLL128[3] = {36.7, 36.7, 29.0};
constexpr double kPerChTree[3] = {38.7, 41.4, 36.0};
constexpr double kPerChNvlsTree[3] = {0.0, 57.7, 45.5};  // perChMaxNVLSTreeBws, Hopper
constexpr double kNvlsEfficiency = 0.85;  // Hopper
constexpr double kNetOverhead = 1.0;      // us, Intel host
// treeCorrectionFactor[proto][log2(bytes / 64)], 64 B to 256 MiB.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// Threads per block and the per-thread work thresholds of the channel tuning (enqueue.cc).
constexpr int kMaxThreads[3] = {512, 640, 512};  // LL, LL128, Simple (Ring and Tree)
constexpr int kThreadThreshold[3] = {8, 8, 64};
constexpr int kNvlsChannels = 16;
// NVLS's heads: the NVLS graph's channels (search.cc: one per GPU pulling from the switch, at
// most NCCL_MAX_NVLS_ARITY = 32 and the node's GPUs; across nodes one per GPU with a NIC, one
// NIC per GPU here). tuning.cc's NVLS and NVLS_TREE bus bandwidth is nChannels x bw of this
// graph, not of the 16 CTAs (nvlsChannels) that run it.
constexpr int kNvlsMaxArity = 32;
// NVLS_TREE's chunk (enqueue.cc, transport/nvls.cc, Hopper): NCCL_NVLS_CHUNKSIZE 128 KiB, at
// most NCCL_NVLSTREE_MAX_CHUNKSIZE (64 KiB from 4 nodes, else the chunk size), cut to 64 and 32
// KiB for sizes of fewer than 4 and 1 chunks per concurrent operation (channels x heads).
constexpr double kNvlsChunk = 128 * 1024;
// CollNet (tuning.cc, enqueue.cc, connect.cc, search.cc): the 0.4 us of arity serialization per
// local peer of CollNet Direct's latency; its Hopper bandwidth factor; at most 8 GPUs per node
// (NCCL_MAX_DIRECT_ARITY + 1: enqueue.cc skips both CollNet algorithms beyond); the CollNet
// graphs' per-channel bandwidth, at most the top of the Hopper inter-node speed array
// (sm90SpeedArrayInter, 48 GB/s), raised in the search's second pass up to twice the NIC's
// ("increase bwIntra for trees (2 nodes or collnet)"); threads (NCCL_MAX_NTHREADS) and the
// per-thread threshold (512) of the channel tuning.
constexpr double kCollnetArityLat = 0.4;
constexpr double kCollnetDirectHopper = 0.85;
constexpr int kCollnetMaxLocal = 8;
constexpr double kCollnetPerChannelMax = 48.0;
constexpr int kCollnetThreads = 640;
constexpr int kCollnetThreadThreshold = 512;

int log2i(double x) { return x < 1 ? -1 : static_cast<int>(std::floor(std::log2(x))); }

alg::Protocol to_protocol(int p) {
  return p == kLL ? alg::Protocol::ll : p == kLL128 ? alg::Protocol::ll128 : alg::Protocol::simple;
}
int index_of(alg::Protocol p) {
  return p == alg::Protocol::ll ? kLL : p == alg::Protocol::ll128 ? kLL128 : kSimple;
}

struct Machine {
  int n = 0, g = 0, nodes = 0;
  double bw = 0;  // GB/s of the ring/tree graph (nChannels x bw per channel)
  double nvlink = 0, nics = 0;  // GB/s: a GPU's NVLink route; a node's NICs together
  bool reduces = false;         // one switch reduces for every rank (NVLS on one node)
  bool node_reduces = false;    // every node's NVSwitch reduces (NVLS_TREE across nodes)
  bool ll128 = true;  // NCCL enables LL128 (across nodes: only with the NIC up to PXN)
  int channels = 0;  // NCCL's channel count for Ring and Tree
  int unreduced_rail = -1;  // across nodes: the first rail whose fabric switch does not reduce
  double collnet_bw = 0;    // GB/s: the CollNet graphs' nChannels x bwIntra
  int heads = 0;            // CollNet Direct's heads per node (one per NIC: one NIC per GPU)
  int collnet_channels = 0;  // NCCL's channel count with CollNet enabled
  // CollNet runs here: several nodes of at most 8 GPUs whose every rail's switch reduces.
  bool collnet() const { return nodes > 1 && g <= kCollnetMaxLocal && unreduced_rail < 0; }
};

Machine machine_of(const topo::Topology& t) {
  Machine m;
  m.n = t.gpu_count();
  m.g = t.gpus_per_node > 0 && t.gpus_per_node <= m.n ? t.gpus_per_node : m.n;
  m.nodes = m.n / m.g;
  const double intra =
      m.g >= 2 ? t.route_summary(0, 1).bandwidth.value : std::numeric_limits<double>::infinity();
  const double inter = m.nodes >= 2 ? t.route_summary(0, m.g).bandwidth.value
                                    : std::numeric_limits<double>::infinity();
  // Across nodes the channels' rings and trees cross on every NIC of a node (one rail each), so
  // the graph's bandwidth is the smaller of a GPU's NVLink and the node's NICs together.
  m.nvlink = intra / 1e9;
  m.nics = m.g * inter / 1e9;
  m.bw = std::min(m.nvlink, m.nics);
  std::vector<int> node0(static_cast<std::size_t>(m.g));
  for (int r = 0; r < m.g; ++r) node0[static_cast<std::size_t>(r)] = r;
  m.node_reduces = m.g >= 2 && t.reducing_switch_of(node0) >= 0;
  m.reduces = m.nodes == 1 ? m.node_reduces : t.has_reducing_switch();
  // tuning.cc: LL128 by default only where the inter-node path is at most PXB, or PXN on Hopper.
  m.ll128 = m.nodes == 1 || !(t.nic_path == "phb" || t.nic_path == "sys");
  m.channels = m.nodes == 1 ? 16 : 2 * std::min(m.g, 8);
  if (m.nodes > 1) {
    std::vector<int> rail(static_cast<std::size_t>(m.nodes));
    for (int l = 0; l < m.g && m.unreduced_rail < 0; ++l) {
      for (int j = 0; j < m.nodes; ++j) rail[static_cast<std::size_t>(j)] = j * m.g + l;
      if (t.reducing_switch_of(rail) < 0) m.unreduced_rail = l;
    }
    // One CollNet channel per head (NIC), each at most 48 GB/s and twice a NIC's bandwidth,
    // all of them together at most a GPU's NVLink route (bwIntra is the intra-node graph's).
    m.heads = std::min(m.g, kCollnetMaxLocal);
    m.collnet_bw = std::min({m.nvlink, 2 * m.nics,
                             m.heads * std::min(kCollnetPerChannelMax, 2 * inter / 1e9)});
    // connect.cc: with CollNet, 50% more channels where the intra-node graph is faster than the
    // network (not with one GPU per node).
    m.collnet_channels = m.g > 1 && m.nvlink > inter / 1e9
                             ? std::min(64, m.channels + m.channels / 2)
                             : m.channels;
  }
  return m;
}

int nvls_heads(const Machine& m) { return std::min(m.g, kNvlsMaxArity); }

// tuning.cc's latency and bandwidth of (algo, proto) and getAlgoTime's time for `bytes`.
NcclEstimate estimate(const Machine& m, int a, int p, double bytes) {
  NcclEstimate e;
  e.algo = a == kRing             ? "ring"
           : a == kTree           ? "tree"
           : a == kNvls           ? "nvls"
           : a == kNvlsTree       ? "nvls_tree"
           : a == kCollnetDirect  ? "collnet_direct"
                                  : "collnet_chain";
  e.proto = to_protocol(p);
  const int idx = std::min(m.nodes, 3) - 1;
  const int nsteps = 2 * (m.n - 1);
  const double ppn = static_cast<double>(m.n) / m.nodes;
  const int nch = a == kNvls || a == kNvlsTree ? nvls_heads(m) : m.channels;
  double bus = m.bw;  // nChannels x bw
  if (a == kNvls) {
    if (p != kSimple || !m.reduces || m.nodes > 1) return e;
    const double per = m.bw / nch;
    const double intra = per * kNvlsEfficiency * (nch - 1) / nch * 2.0;
    bus = nch * std::min(intra, per);
  }
  if (a == kNvlsTree) {  // NVLS in every node, NCCL's tree across (2 nodes: twice the NICs)
    if (p != kSimple || !m.node_reduces || m.nodes == 1) return e;
    const double intra = m.nvlink / nch * kNvlsEfficiency * (nch - 1) / nch * 2.0;
    const double inter = m.nics / nch * (m.nodes <= 2 ? 2 : 1);
    bus = nch * std::min({intra, inter, kPerChNvlsTree[idx]});
  }
  if (a == kCollnetDirect || a == kCollnetChain) {  // Simple only ("Not used" otherwise)
    if (p != kSimple || !m.collnet()) return e;
    if (a == kCollnetDirect && m.g == 1) return e;  // NCCL disables it without an NVSwitch
    bus = m.collnet_bw;
    if (a == kCollnetDirect) {  // "all GPUs need a local NIC": factor 1 with one NIC per GPU
      double factor = ppn / m.heads;
      factor -= (factor - 1) / 2;
      bus = bus / factor * kCollnetDirectHopper;
    }
  }
  if (a == kRing && p == kLL) bus = std::min(kLlMaxBw[idx], bus * .5);
  if (a == kRing && p == kLL128) bus = std::min(bus * 0.92, nch * kPerChRingLL128[idx]);
  if (a == kTree) bus = std::min(bus * .92, nch * kPerChTree[idx]);
  if (a == kTree && p == kLL) bus = std::min(bus / 3.8, kLlMaxBw[idx]);
  if (a == kTree && p == kLL128)
    bus = std::min(bus * (m.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * kPerChTreeLL128[idx]);
  // Ring, NVLS, NVLS Tree: n/2(n-1); Tree and CollNet: 0.5.
  bus *= a == kTree || a == kCollnetDirect || a == kCollnetChain
             ? 0.5
             : static_cast<double>(m.n) / nsteps;
  double lat = kBaseLat[a][p];
  double intra_lat = kHwLatNvlink[a][p];
  const double inter_lat = ppn == 1 ? kHwLatNet[kTree][p] : kHwLatNet[a][p];
  if (a == kRing) {
    const double overhead = m.nodes > 1 ? kNetOverhead * (p == kSimple ? 3 : 1) : 0;
    intra_lat = std::max(intra_lat, overhead);
    const int inter_steps = m.nodes == 1 ? 0 : 2 * (m.nodes - 1);
    lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
  } else if (a == kTree) {
    lat += 2 * ((ppn - 1) * intra_lat + log2i(m.nodes) * inter_lat);
  } else if (a == kNvls) {
    lat = intra_lat;
  } else if (a == kCollnetDirect) {
    lat += 2 * (std::min(1.0, ppn - 1) * intra_lat + (ppn - 1) * kCollnetArityLat) + inter_lat;
  } else if (a == kCollnetChain) {
    lat += 2 * (ppn - 1) * intra_lat + inter_lat;
  } else {
    lat += intra_lat + 2 * log2i(m.nodes) * inter_lat;
  }
  e.latency_us = lat;
  double bw = bus;
  const int log_size = log2i(bytes / 64);
  if (a == kTree && log_size >= 0 && log_size < 23) bw *= kTreeCorrection[p][log_size];
  if (a == kRing && p == kSimple && m.nodes > 1 && bytes / (m.channels * m.n) >= 64) lat *= 1.4;
  e.bandwidth_gbs = bw;
  e.time_us = lat + bytes / (1000 * bw);
  return e;
}

// enqueue.cc's channel tuning for Ring and Tree: fewer channels while each thread would get
// less than its threshold.
int tuned_channels(const Machine& m, int a, int p, double bytes) {
  if (a == kNvls || a == kNvlsTree) return kNvlsChannels;
  if (a == kCollnetDirect) {  // enqueue.cc's CollNet channel tuning (heads x threads per block)
    int nc = m.collnet_channels;
    double threshold = kCollnetThreadThreshold;
    bool flag = true;
    for (int sw = 16; sw >= 1 && flag; sw /= 2) {
      while ((flag = bytes < static_cast<double>(nc) * kCollnetThreads * m.heads * threshold) &&
             nc > sw) {
        if (nc == sw + sw / 2) threshold /= 2;
        --nc;
      }
    }
    return nc;
  }
  if (a == kCollnetChain) {  // the Ring/Tree tuning with CollNet's threads and threshold
    int nc = m.collnet_channels;
    while (bytes < static_cast<double>(nc) * kCollnetThreads * kCollnetThreadThreshold && nc >= 2)
      --nc;
    return nc;
  }
  const int nt = kMaxThreads[p];
  double threshold = kThreadThreshold[p];
  if (a == kRing && p == kLL) threshold *= m.n;
  int nc = m.channels;
  while (bytes < static_cast<double>(nc) * nt * threshold && nc >= 2) --nc;
  return nc;
}

// The pipeline depth (slices) of `nvls` for `bytes` on a one-node topology whose switch reduces:
// the one of least time by nvls's closed form (docs/in_network_reduction.md, `nvls`), powers of
// two from 1 to 1024. NCCL cuts NVLS into chunks of 128 KiB per channel and overlaps their
// latencies; the simulator pays each round's latency, so the depth NCCL's chunks give would
// cost hundreds of latencies at large sizes: the closed form's best depth stands in for it.
int nvls_pipeline(const topo::Topology& t, double bytes) {
  const int n = t.gpu_count();
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
  const int vertex = t.reducing_switch_of(all);
  if (vertex < 0 || !t.node(vertex).reduce) return 1;
  const topo::SwitchReduction& red = *t.node(vertex).reduce;
  const topo::RouteSummary route = t.route_summary(0, 1);
  const alg::CostParams p{.alpha = route.latency.value,
                          .beta = 1.0 / route.bandwidth.value,
                          .switch_beta = 1.0 / red.bandwidth.value,
                          .switch_latency = red.latency.value};
  int best = 1;
  double best_time = std::numeric_limits<double>::infinity();
  for (int depth = 1; depth <= 1024; depth *= 2) {
    const double time = alg::nvls_cost(n, bytes, depth, p);
    if (time < best_time) {
      best_time = time;
      best = depth;
    }
  }
  return best;
}

// The pipeline depth of `nvls_tree` for `bytes` across nodes (inter ring): the one of least
// estimated time, a pipeline's fill (one slice through its stages: the switch's reduce-scatter,
// the inter ring's rounds per rail, the multicast) plus the slowest stage once per further
// slice, by the stages' alpha-beta terms on the topology; powers of two from 1 to 1024. As for
// nvls: NCCL streams 128 KiB chunks and overlaps their latencies, the simulator pays them.
int nvls_tree_pipeline(const topo::Topology& t, const Machine& m, double bytes) {
  std::vector<int> node0(static_cast<std::size_t>(m.g));
  for (int r = 0; r < m.g; ++r) node0[static_cast<std::size_t>(r)] = r;
  const int vertex = t.reducing_switch_of(node0);
  if (vertex < 0 || !t.node(vertex).reduce) return 1;
  const topo::SwitchReduction& red = *t.node(vertex).reduce;
  const topo::RouteSummary nv = t.route_summary(0, 1), net = t.route_summary(0, m.g);
  const double alpha = nv.latency.value, beta = 1.0 / nv.bandwidth.value;
  const double beta_r = 1.0 / red.bandwidth.value, lambda = red.latency.value;
  const alg::AlgorithmInfo& ring = alg::find_algorithm("ring");
  const alg::CostParams rail{.alpha = net.latency.value, .beta = 1.0 / net.bandwidth.value};
  const double inter_rounds = 2.0 * (m.nodes - 1);
  int best = 1;
  double best_time = std::numeric_limits<double>::infinity();
  for (int p = 1; p <= 1024; p *= 2) {
    const double q = bytes / p;
    const double rs = alpha + lambda + std::max(q * beta, q * beta_r);
    const double inter = ring.cost(m.nodes, q / m.g, rail, alg::Options{}) / inter_rounds;
    const double ag = alpha + q * (m.g - 1) / m.g * beta;
    const double time =
        rs + inter_rounds * inter + ag + (p - 1) * std::max({rs, inter, ag});
    if (time < best_time) {
      best_time = time;
      best = p;
    }
  }
  return best;
}

// NVLS_TREE's pipeline depth as NCCL cuts it (enqueue.cc): a slice is one chunk of each of
// its concurrent operations (16 CTAs x the heads), the chunk 128 KiB (64 KiB from 4 nodes),
// 64 KiB below 4 slices' worth and 32 KiB below one; 1 to 1024 slices. A slice of the schedule
// is then one step of every NCCL channel, so the executor's 8 rounds in flight are NCCL_STEPS.
int nvls_tree_chunk_pipeline(const Machine& m, double bytes) {
  const double ops = static_cast<double>(kNvlsChannels) * nvls_heads(m);
  double chunk = m.nodes >= 4 ? 64 * 1024 : kNvlsChunk;
  if (bytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
  if (bytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
  if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  const double slices = std::ceil(bytes / (ops * chunk));
  return static_cast<int>(std::clamp(slices, 1.0, 1024.0));
}

// The pipeline depth of `collnet_direct` for `bytes`: the one of least estimated time, one
// slice through its stages (the scatter to the heads and the gather, alpha + (G-1)/G q beta
// each over NVLink, the rail switch's alpha_f + lambda + max(q/G beta_f, q/G beta_r)) plus the
// slowest stage once per further slice; powers of two from 1 to 1024 (as nvls_tree's).
int collnet_direct_pipeline(const topo::Topology& t, const Machine& m, double bytes) {
  std::vector<int> rail(static_cast<std::size_t>(m.nodes));
  for (int j = 0; j < m.nodes; ++j) rail[static_cast<std::size_t>(j)] = j * m.g;
  const int vertex = t.reducing_switch_of(rail);
  if (vertex < 0 || !t.node(vertex).reduce) return 1;
  const topo::SwitchReduction& red = *t.node(vertex).reduce;
  const topo::RouteSummary net = t.route_summary(0, m.g);
  const double beta_r = 1.0 / red.bandwidth.value, lambda = red.latency.value;
  double alpha = 0, beta = 0;
  if (m.g > 1) {
    const topo::RouteSummary nv = t.route_summary(0, 1);
    alpha = nv.latency.value;
    beta = 1.0 / nv.bandwidth.value;
  }
  int best = 1;
  double best_time = std::numeric_limits<double>::infinity();
  for (int p = 1; p <= 1024; p *= 2) {
    const double piece = bytes / p / m.g;
    const double local = m.g > 1 ? alpha + (m.g - 1) * piece * beta : 0.0;
    const double fabric = net.latency.value + lambda +
                          std::max(piece / net.bandwidth.value, piece * beta_r);
    const double time = 2 * local + fabric + (p - 1) * std::max(local, fabric);
    if (time < best_time) {
      best_time = time;
      best = p;
    }
  }
  return best;
}

std::string allowed_algos(const Machine& m) {
  std::string collnet;
  if (m.collnet()) collnet = m.g > 1 ? ", collnet_direct, collnet_chain" : ", collnet_chain";
  if (m.reduces && m.nodes == 1) return "ring, tree, nvls";
  if (m.node_reduces && m.nodes > 1) return "ring, tree, nvls_tree" + collnet;
  return "ring, tree" + collnet;
}

// Why NCCL would not run CollNet (`algo`) on this machine; empty when it would.
std::string collnet_refusal(const topo::Topology& t, const Machine& m, const std::string& algo) {
  if (m.nodes == 1) {
    return "CollNet reduces across nodes in the fabric's switches (one node here: topology " +
           t.name + (t.gpus_per_node > 0 ? "" : " has no gpus_per_node") + ")";
  }
  if (m.unreduced_rail >= 0) {
    return "topology " + t.name + " has no reducing fabric switch that joins the GPUs of rail " +
           std::to_string(m.unreduced_rail) + " (local index " +
           std::to_string(m.unreduced_rail) +
           " of every node; give its fabric a reduce: {bandwidth, latency} key: SHARP)";
  }
  if (m.g > kCollnetMaxLocal) {
    return "NCCL runs CollNet with at most " + std::to_string(kCollnetMaxLocal) +
           " GPUs per node (NCCL_MAX_DIRECT_ARITY + 1; " + std::to_string(m.g) + " here)";
  }
  if (algo == "collnet_direct" && m.g == 1) {
    return "NCCL disables CollNetDirect without an NVSwitch (one GPU per node here)";
  }
  return "";
}

}  // namespace

double nccl_channel_bandwidth(const topo::Topology& topology) {
  if (topology.gpu_count() < 2) return std::numeric_limits<double>::infinity();
  const Machine m = machine_of(topology);
  return m.bw / m.channels * 1e9;
}

double nccl_ll_max_bandwidth(const topo::Topology& topology) {
  if (topology.gpu_count() < 2) return std::numeric_limits<double>::infinity();
  const Machine m = machine_of(topology);
  return kLlMaxBw[std::min(m.nodes, 3) - 1] * 1e9;
}

double nccl_nvls_tree_bandwidth(const topo::Topology& topology) {
  const Machine m = machine_of(topology);
  if (m.nodes < 2 || m.g < 2) return std::numeric_limits<double>::infinity();
  const double bus = nvls_heads(m) * kPerChNvlsTree[std::min(m.nodes, 3) - 1];
  return bus * m.n / (2.0 * (m.n - 1)) * 1e9;
}

NcclChoice nccl_choose(const topo::Topology& topology, Bytes size,
                       const alg::NcclRequest& request, bool pipelined_steps) {
  const Machine m = machine_of(topology);
  const std::string& algo = request.algo();
  const std::optional<alg::Protocol> proto = request.proto();
  if (algo == "nvls" && (!m.reduces || m.nodes > 1)) {
    throw InputError(
        "nccl option algo=nvls: " +
        std::string(!m.reduces
                        ? "topology " + topology.name + " has no switch that reduces"
                        : "NVLS alone runs on one node (" + std::to_string(m.nodes) + " here)") +
        "; allowed here: " + allowed_algos(m));
  }
  if (!m.ll128 && proto == alg::Protocol::ll128) {
    throw InputError("nccl option proto=ll128: NCCL does not enable LL128 across nodes where a "
                     "GPU reaches its NIC through " +
                     std::string(topology.nic_path == "phb" ? "the host bridge (nic path: phb)"
                                                            : "another CPU socket (nic path: sys)") +
                     " (tuning.cc: up to PXB, or PXN on Hopper); allowed here: simple, ll");
  }
  if (algo == "nvls_tree" && (!m.node_reduces || m.nodes == 1)) {
    throw InputError("nccl option algo=nvls_tree: " +
                     std::string(m.nodes == 1 ? "NVLS_TREE runs across nodes (one node here)"
                                              : "the NVSwitch of topology " + topology.name +
                                                    "'s nodes does not reduce (nvlink has no "
                                                    "reduce: key)") +
                     "; allowed here: " + allowed_algos(m));
  }
  if (algo == "collnet_direct" || algo == "collnet_chain") {
    const std::string why = collnet_refusal(topology, m, algo);
    if (!why.empty())
      throw InputError("nccl option algo=" + algo + ": " + why + "; allowed here: " +
                       allowed_algos(m));
  }
  const double bytes = static_cast<double>(size.value);
  NcclChoice choice;
  double best = std::numeric_limits<double>::infinity();
  int best_a = -1, best_p = -1;
  for (int a : {kTree, kRing, kNvls, kNvlsTree, kCollnetDirect, kCollnetChain}) {
    for (int p : {kLL, kLL128, kSimple}) {
      if (p == kLL128 && !m.ll128) continue;  // not enabled on this machine
      NcclEstimate e = estimate(m, a, p, bytes);
      if (e.time_us < 0) continue;
      choice.table.push_back(e);
      if (!algo.empty() && e.algo != algo) continue;
      if (proto && index_of(*proto) != p) continue;
      if (e.time_us < best) {
        best = e.time_us;
        best_a = a;
        best_p = p;
      }
    }
  }
  SSIM_CHECK(best_a >= 0, "no NCCL algorithm and protocol for a checked request");
  choice.algo = best_a == kRing             ? "ring"
                : best_a == kTree           ? "tree"
                : best_a == kNvls           ? "nvls"
                : best_a == kNvlsTree       ? "nvls_tree"
                : best_a == kCollnetDirect  ? "collnet_direct"
                                            : "collnet_chain";
  choice.proto = to_protocol(best_p);
  choice.estimate_us = best;
  choice.channels = request.channels_or(tuned_channels(m, best_a, best_p, bytes));
  choice.gpus_per_node = m.g;
  if (!request.has_pipeline()) {  // nccl_choose's comment (sim/nccl_tuner.hpp)
    if (best_a == kNvls) choice.pipeline = nvls_pipeline(topology, bytes);
    if (best_a == kNvlsTree) {
      choice.pipeline = pipelined_steps ? nvls_tree_chunk_pipeline(m, bytes)
                                        : nvls_tree_pipeline(topology, m, bytes);
    }
    if (best_a == kCollnetDirect) choice.pipeline = collnet_direct_pipeline(topology, m, bytes);
  }
  return choice;
}

}  // namespace ssim::sim
