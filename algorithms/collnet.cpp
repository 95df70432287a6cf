// NCCL's CollNet AllReduce algorithms, SHARP in the inter-node fabric, as NCCL runs them
// (NVIDIA/nccl src/device/all_reduce.h, RunWorkColl<AllReduce, COLLNET_DIRECT> and
// <AllReduce, COLLNET_CHAIN>; src/graph/connect.cc, connectCollNet and ncclTopoPreset). Ranks are
// nodes x G (rank = node * G + local, as the hierarchical topology numbers its GPUs); every GPU
// has its own NIC on rail `local`, and the rail's switch reduces (a SHARP aggregation node per
// rail of a rail-optimized fabric): a reduction of the GPUs with one local index across the
// nodes goes through that switch (SwitchReduce; which switch is the simulator's question).
// `gpus_per_node` G (default 1: every GPU its own node) must leave N = n/G >= 2 nodes.
//
// collnet_direct (NCCL_ALGO=CollNetDirect). Every GPU of a node is a head (connectCollNet: one
// head per channel of the CollNet Direct graph, one per NIC; here one NIC per GPU); the buffer
// is cut into P = `pipeline` slices of G pieces, piece l of slice p = chunk p G + l, owned by
// head (local) l. Per slice, the three stages of NCCL's kernel:
//   "direct-reduce-scatter"  every GPU sends piece l to head l directly over NVLink (NCCL's
//                            scatter to all heads, `shift` so that no two GPUs of a node send
//                            to the same head at once: here the k-th send of local i goes to
//                            local i + k); the head reduces them (recvReduceDirectSend);
//   "switch-allreduce"       rail l's switch sums piece l of the N heads l and returns the sum
//                            to all of them (the head's send to and receive from the network);
//   "direct-allgather"       head l sends piece l directly to the G - 1 others of its node
//                            (directRecvCopyDirectSend to every peer; the others' gather).
// Round t holds stage t - p of every slice p in the pipeline then (P + 2 rounds; G = 1: the
// switch stage alone, P rounds), so a round may scatter slice p while slice p - 1 is reduced in
// the fabric and slice p - 2 is gathered, as NCCL's warps run the three at once.
//
// collnet_chain (NCCL_ALGO=CollNetChain). `channels` C chains per node (the CollNet Chain graph
// has the Ring graph's channel count; channel c's chain starts at its head, local c mod G, and
// runs through the node's GPUs in local order from there: position i is local (h + i) mod G,
// its up is position i - 1 and the head's up is the network: ncclTopoPreset's collnetChain.up =
// nRanks). Channel c's share is cut into P = `segments` segments, chunk c P + j, that flow up
// the chain (reduce: directRecvReduceDirectSend), through the rail switch of the head (SHARP
// reduce and broadcast to the N heads of rail h) and back down (copy:
// directRecvCopyDirectSend), reduce and broadcast at once (NCCL splits the block's threads in
// two). With D = G - 1 the chain's depth, a GPU at depth d >= 1 sends segment j up in step
// j + D - d, the switch reduces segment j in step j + D, and the GPU at depth d >= 1 receives
// it from depth d - 1 in step j + D + d: P + 2D steps, one round each.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

constexpr int kMaxPipeline = 1024;
constexpr int kMaxSegments = 4096;
constexpr int kDefaultSegments = 16;
constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS
constexpr int kDefaultChannelsCap = 8;
constexpr long long kMaxChunks = 1LL << 30;

// G GPUs per node, N = n / G >= 2 nodes (the switch reduces across nodes).
int collnet_gpus(const std::string& name, int n, const Options& o) {
  const std::string text = o.get_string("gpus_per_node", "1");
  int g = 1;
  try {
    g = o.get_int("gpus_per_node", 1, 1, n);
  } catch (const InputError& e) {
    throw InputError(name + " " + e.what() + " (gpus_per_node must divide the " +
                     std::to_string(n) + " ranks into at least 2 nodes)");
  }
  if (n % g != 0 || n / g < 2) {
    throw InputError(name + " option gpus_per_node=" + text + ": must divide the rank count " +
                     std::to_string(n) +
                     " into at least 2 nodes (the fabric's switch reduces across nodes)");
  }
  return g;
}

struct DirectShape {
  int g = 1, nodes = 2, slices = 1;
};

DirectShape direct_shape(int n, const Options& o) {
  DirectShape s;
  s.g = collnet_gpus("collnet_direct", n, o);
  s.nodes = n / s.g;
  try {
    s.slices = o.get_int("pipeline", 1, 1, kMaxPipeline);
  } catch (const InputError& e) {
    throw InputError("collnet_direct " + std::string(e.what()));
  }
  return s;
}

// The stages of a slice: 0 the scatter to the heads, 1 the rails' switches, 2 the gather
// (G = 1: the switch stage only).
int direct_stages(const DirectShape& s) { return s.g == 1 ? 1 : 3; }

void append_direct_stage(Round& round, const DirectShape& s, int p, int stage) {
  const int g = s.g, nodes = s.nodes;
  if (g == 1) stage = 1;
  const int base = p * g;
  if (stage == 1) {
    for (int l = 0; l < g; ++l) {
      std::vector<int> rail = rail_members(l, g, nodes);
      round.switch_reduces.push_back(SwitchReduce{rail, rail, base + l, base + l + 1});
    }
    return;
  }
  // The k-th transfer of every GPU goes to (from) local + k: each step a perfect matching.
  for (int k = 1; k < g; ++k) {
    for (int j = 0; j < nodes; ++j) {
      for (int i = 0; i < g; ++i) {
        const int other = (i + k) % g;
        if (stage == 0) {  // local i's piece `other` to head `other`
          round.add(j * g + i, j * g + other, base + other, base + other + 1, Op::reduce);
        } else {  // head i's piece to local `other`
          round.add(j * g + i, j * g + other, base + i, base + i + 1, Op::copy);
        }
      }
    }
  }
}

const char* direct_phase(const DirectShape& s, int stage) {
  if (s.g == 1 || stage == 1) return "switch-allreduce";
  return stage == 0 ? "direct-reduce-scatter" : "direct-allgather";
}

RoundStream collnet_direct_rounds(DirectShape s) {
  const int stages = direct_stages(s);
  const int total = s.slices + stages - 1;
  Round round;
  for (int t = 0; t < total; ++t) {
    round.transfers.clear();
    round.switch_reduces.clear();
    std::string phase;
    for (int p = std::max(0, t - stages + 1); p <= std::min(t, s.slices - 1); ++p) {
      append_direct_stage(round, s, p, t - p);
      const std::string name = direct_phase(s, t - p);
      phase = phase.empty() || phase == name ? name : "pipeline";
    }
    round.phase = phase;
    co_yield round;
  }
}

GeneratedRounds make_collnet_direct(int n, const Options& o) {
  const DirectShape s = direct_shape(n, o);
  return {Schedule::make(Collective::allreduce, "collnet_direct", n, s.slices * s.g),
          collnet_direct_rounds(s),
          static_cast<std::size_t>(s.slices + direct_stages(s) - 1)};
}

struct ChainShape {
  int g = 1, nodes = 2, channels = 1, segments = kDefaultSegments;
};

ChainShape chain_shape(int n, const Options& o) {
  ChainShape s;
  s.g = collnet_gpus("collnet_chain", n, o);
  s.nodes = n / s.g;
  try {
    s.channels = o.get_int("channels", std::min(s.g, kDefaultChannelsCap), 1, kMaxChannels);
    s.segments = o.get_int("segments", kDefaultSegments, 1, kMaxSegments);
  } catch (const InputError& e) {
    throw InputError("collnet_chain " + std::string(e.what()));
  }
  const long long chunks = static_cast<long long>(s.channels) * s.segments;
  if (chunks > kMaxChunks) {
    throw InputError("collnet_chain: channels=" + std::to_string(s.channels) +
                     " x segments=" + std::to_string(s.segments) + " = " +
                     std::to_string(chunks) + " chunks, more than " + std::to_string(kMaxChunks));
  }
  return s;
}

int chain_steps(const ChainShape& s) { return s.segments + 2 * (s.g - 1); }

RoundStream collnet_chain_rounds(ChainShape s) {
  const int g = s.g, nodes = s.nodes, depth = g - 1, segments = s.segments;
  std::vector<std::vector<int>> rails;  // the heads of every node, per local
  for (int l = 0; l < g; ++l) rails.push_back(rail_members(l, g, nodes));
  Round round;
  const int steps = chain_steps(s);
  for (int t = 0; t < steps; ++t) {
    round.transfers.clear();
    round.switch_reduces.clear();
    bool up = false, sw = false, down = false;
    for (int c = 0; c < s.channels; ++c) {
      const int head = c % g, base = c * segments;
      auto rank = [&](int node, int position) { return node * g + (head + position) % g; };
      for (int d = 1; d <= depth; ++d) {  // up: depth d reduces segment t - (D - d) into d - 1
        const int j = t - (depth - d);
        if (j < 0 || j >= segments) continue;
        for (int node = 0; node < nodes; ++node)
          round.add(rank(node, d), rank(node, d - 1), base + j, base + j + 1, Op::reduce);
        up = true;
      }
      const int js = t - depth;  // the rail switch of the head reduces segment t - D
      if (js >= 0 && js < segments) {
        const std::vector<int>& rail = rails[static_cast<std::size_t>(head)];
        round.switch_reduces.push_back(SwitchReduce{rail, rail, base + js, base + js + 1});
        sw = true;
      }
      for (int d = 1; d <= depth; ++d) {  // down: depth d - 1 forwards segment t - D - d
        const int j = t - depth - d;
        if (j < 0 || j >= segments) continue;
        for (int node = 0; node < nodes; ++node)
          round.add(rank(node, d - 1), rank(node, d), base + j, base + j + 1, Op::copy);
        down = true;
      }
    }
    round.phase = (up + sw + down) > 1 ? "pipeline"
                  : up                 ? "chain-reduce"
                  : sw                 ? "switch-allreduce"
                                       : "chain-broadcast";
    co_yield round;
  }
}

GeneratedRounds make_collnet_chain(int n, const Options& o) {
  const ChainShape s = chain_shape(n, o);
  return {Schedule::make(Collective::allreduce, "collnet_chain", n, s.channels * s.segments),
          collnet_chain_rounds(s), static_cast<std::size_t>(chain_steps(s))};
}

}  // namespace

double collnet_direct_cost(int n, double bytes, int g, const CostParams& intra,
                           const CostParams& inter, bool flow) {
  (void)n;
  const double piece = bytes / g;
  const double fabric = inter.alpha + inter.switch_latency +
                        std::max(piece * inter.beta, piece * inter.switch_beta);
  if (g == 1) return fabric;
  // Alpha-beta: a GPU's G-1 sends (and receives) one after another on its port; flow: at once,
  // sharing its NVLink, one latency.
  const double phase = flow ? intra.alpha + (g - 1) * piece * intra.beta
                            : (g - 1) * (intra.alpha + piece * intra.beta);
  return phase + piece * intra.gamma + fabric + phase;
}

double collnet_chain_cost(int n, double bytes, int g, int channels, const CostParams& intra,
                          const CostParams& inter, bool flow) {
  (void)n;
  if (channels > g && channels % g != 0) {
    throw InputError("collnet_chain with channels=" + std::to_string(channels) +
                     " has no closed form unless the channels are at most gpus_per_node=" +
                     std::to_string(g) + " or a multiple of it: simulate it instead");
  }
  const double q = bytes / channels;      // a channel's share
  const int m = (channels + g - 1) / g;   // channels per rail (per GPU and step)
  // Alpha-beta: a GPU's m sends of a step one after another; flow: at once, one latency.
  const double latency = flow ? intra.alpha : m * intra.alpha;
  const double up = latency + m * q * intra.beta + q * intra.gamma;
  const double down = latency + m * q * intra.beta;
  return (g - 1) * (up + down) + inter.alpha + inter.switch_latency +
         std::max(m * q * inter.beta, m * q * inter.switch_beta);
}

AlgorithmInfo collnet_direct_info() {
  return AlgorithmInfo{
      .name = "collnet_direct",
      .description =
          "NCCL_ALGO=CollNetDirect (SHARP): every GPU sends piece l directly to local l of its "
          "node, rail l's fabric switch reduces piece l across the nodes, local l sends it "
          "directly to the others; pipelined in slices; needs a reducing fabric switch per "
          "rail; 2(G-1)(alpha + s/G beta) + s/G gamma + alpha_f + lambda + max(s/G beta_f, "
          "s/G beta_r)",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"gpus_per_node",
                   "GPUs per node G, N = n/G >= 2 nodes (rank = node*G + local); experiments "
                   "take it from a hierarchical topology",
                   "1"},
                  {"pipeline",
                   "slices streamed through the scatter, the switch and the gather (slice k "
                   "scattered while slice k-1 is in the fabric), 1..1024",
                   "1"}},
      .rounds = make_collnet_direct,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            const DirectShape s = direct_shape(n, o);
            if (s.slices > 1) {
              throw InputError("collnet_direct with pipeline=" + std::to_string(s.slices) +
                               " has no closed form (its slices overlap in the network): "
                               "simulate it instead");
            }
            return collnet_direct_cost(n, bytes, s.g, p, p);
          },
      // Chunks P G; rounds P + 2; per stage n (G-1) transfers, at most two transfer stages in
      // a round; pairs: every ordered pair inside a node.
      .size =
          [](int n, const Options& o) {
            const DirectShape s = direct_shape(n, o);
            const double r = n, g = s.g, slices = s.slices;
            const double stage = r * (g - 1);
            return ScheduleSize{slices * g, slices + direct_stages(s) - 1, 2 * slices * stage,
                                2 * stage, stage};
          },
      .check_options = [](int n, const Options& o) { (void)direct_shape(n, o); },
      .in_network = true,
      .reduce_scope = AlgorithmInfo::ReduceScope::rails,
      // One GPU per node (its default, and what a topology without nodes gives it), one slice:
      // collnet's one switch reduction of all ranks.
      .one_node_equals = "collnet",
  };
}

AlgorithmInfo collnet_chain_info() {
  return AlgorithmInfo{
      .name = "collnet_chain",
      .description =
          "NCCL_ALGO=CollNetChain (SHARP): per channel a chain of the node's GPUs up to its "
          "head (local c mod G), the head's rail switch reduces across the nodes and returns "
          "the sum, the chain back down, pipelined in segments; needs a reducing fabric switch "
          "per rail; segments=1: (G-1)(2m alpha + 2 s/G beta + s/C gamma) + alpha_f + lambda + "
          "max(s/G beta_f, s/G beta_r), m = C/G",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"gpus_per_node",
                   "GPUs per node G, N = n/G >= 2 nodes (rank = node*G + local); experiments "
                   "take it from a hierarchical topology",
                   "1"},
                  {"channels",
                   "chains C, channel c's head local c mod G (its NIC's rail), each over its "
                   "share of the buffer, 1.." +
                       std::to_string(kMaxChannels),
                   "min(G, " + std::to_string(kDefaultChannelsCap) + ")"},
                  {"segments",
                   "segments each channel's share is pipelined in, 1.." +
                       std::to_string(kMaxSegments),
                   std::to_string(kDefaultSegments)}},
      .rounds = make_collnet_chain,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            const ChainShape s = chain_shape(n, o);
            if (s.segments > 1) {
              throw InputError("collnet_chain with segments=" + std::to_string(s.segments) +
                               " has no closed form (its segments overlap in the network): "
                               "simulate it instead, or give segments=1");
            }
            return collnet_chain_cost(n, bytes, s.g, s.channels, p, p);
          },
      // Chunks C P; rounds P + 2(G-1); per round and channel at most 2 (G-1) N transfers
      // (up and down); pairs: both directions of every chain edge, per head.
      .size =
          [](int n, const Options& o) {
            const ChainShape s = chain_shape(n, o);
            const double g = s.g, nodes = s.nodes, c = s.channels, seg = s.segments;
            const double edges = (g - 1) * nodes;  // per channel
            return ScheduleSize{c * seg, static_cast<double>(chain_steps(s)), 2 * c * seg * edges,
                                2 * c * edges, 2 * std::min(c, g) * edges};
          },
      .check_options = [](int n, const Options& o) { (void)chain_shape(n, o); },
      .in_network = true,
      .reduce_scope = AlgorithmInfo::ReduceScope::rails,
  };
}

}  // namespace ssim::alg
