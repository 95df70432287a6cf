// What NCCL runs for AllReduce across nodes, as schedules: NCCL_ALGO=Ring with its channels
// (nccl_ring) and NCCL_ALGO=Tree, the double binary tree across nodes with a chain inside each
// node (nccl_tree). Ranks are nodes x G (rank = node * G + local, as the hierarchical topology
// numbers its GPUs); `gpus_per_node` G must divide n (one node when absent).
//
// Channels. NCCL splits the buffer between C channels (one CUDA block each, NCCL_MIN_NCHANNELS /
// NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS / NCCL_MAX_CTAS) that run the same algorithm on their own
// share, each over its own ring or tree, all at once. Here channel c owns its share's chunks and
// every round holds the transfers of every channel (channel-major), so a rank sends C transfers
// per round: the flow model runs them at once, sharing the links; the alpha-beta model serves a
// rank's sends one after another on its one send port (docs/algorithms.md says what that costs).
//
// nccl_ring: C rings, each an AllReduce of its share cut into L = `loops` parts run one after
// another (NCCL's loop: nranks x chunkSize per channel; it depends on the size, which a schedule
// does not know, hence an option), each part a ring ReduceScatter then AllGather of n chunks
// (2(n-1) steps, one round each). Chunk of (loop l, channel c, ring position p) =
// (l C + c) n + p, NCCL's layout (loop-major, a channel's part contiguous).
// Ring orders on rail-optimized nodes with the property NCCL's topology search gives them
// (src/graph/search.cc and rings.cc: per channel a path NET -> GPU ... GPU -> NET inside every
// node, nodes concatenated; its node crossings on one rail, the channels spread over the NICs;
// the orders below are ours, NCCL reaches the same NIC load through PXN): channel c enters node j
// on local r_j(c) and leaves it on local r_{j+1}(c) != r_j(c) after visiting every other local over
// NVLink; the crossing from node j to node j+1 is from local r_{j+1} to local r_{j+1}, one rail.
// With a = c mod G: r_j = a + (j mod 2) (mod G) for an even node count; for an odd count the last
// node enters on a + 2 (G >= 3), so the crossing back to node 0 is on rail a again; with G = 2 and
// an odd node count the last crossing goes from rail a + 1 to rail a (through the fabric's spines).
// Channels c and c + G use the same rails; C a multiple of G puts the same number of crossings on
// every NIC of a node. One node: channel c's ring is the locals in order from a. G = 1: one ring
// over the nodes.
//
// nccl_tree: channel c runs NCCL's double binary tree number c mod 2 over the node indices
// (src/graph/trees.cc, ncclGetBtree / ncclGetDtree: tree 0 a binary tree rooted at node 0 whose
// root has one child, in which a node whose lowest set bit is b has parent (j xor b) | 2b, or
// j xor b when that is out of range, and children j -/+ b/2; tree 1 the same tree mirrored
// (j -> N-1-j) for an even node count, shifted by one (j -> j+1) for an odd one), each node a
// chain of its G GPUs hanging from its head, local h = (c / 2) mod G: chain position i is local
// (h + i) mod G, its parent position i - 1; the head's parent is the parent node's head (the
// same local: one rail) and the head of a child node hangs from it. The channel's share is cut
// into P = `segments` segments that flow up (reduce) and back down (copy) pipelined, reduce and
// broadcast at once as NCCL's tree kernel runs them: with D the channel's deepest depth, a rank
// at depth d sends segment j to its parent in step j + D - d, the root has segment j complete
// after step j + D - 1 and sends it down in step j + D, a rank at depth d forwards it to its
// children in step j + D + d; P + 2D - 1 steps, one round each.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/cost_model.hpp"
#include "algorithms/generators.hpp"
#include "algorithms/nccl_options.hpp"
#include "algorithms/protocol.hpp"
#include "common/error.hpp"
#include "common/text.hpp"

namespace ssim::alg {
namespace {

constexpr int kDefaultChannelsCap = 8;
constexpr int kMaxLoops = 4096;
constexpr int kMaxTreeSegments = 4096;
constexpr int kDefaultTreeSegments = 16;
// The chunk count is an int32 in the IR; keep well below it.
constexpr long long kMaxChunks = 1LL << 30;

struct NcclShape {
  int n = 0;
  int g = 0;      // GPUs per node
  int nodes = 0;  // N
  int channels = 0;
  int parts = 0;  // loops (ring) or segments (tree)
};

NcclShape checked_nccl_shape(const std::string& name, int n, const Options& o, bool tree) {
  NcclShape s;
  s.n = n;
  s.g = checked_gpus_per_node(name, n, o, 1);
  s.nodes = n / s.g;
  // Enough channels for every rail: the ring's channel c leaves a node on its own rail; the
  // tree's channels 2k and 2k+1 share head k and run the two trees (NCCL duplicates its
  // channels the same way, ncclTopoPostset). One node: one channel (NCCL runs more there for
  // the bandwidth of more CUDA blocks, a per-channel limit this model does not have yet).
  const int default_channels =
      s.nodes == 1 ? 1 : (tree ? 2 : 1) * std::min(s.g, kDefaultChannelsCap);
  try {
    s.channels = o.get_int("channels", default_channels, 1, kNcclMaxChannels);
    s.parts = tree ? o.get_int("segments", kDefaultTreeSegments, 1, kMaxTreeSegments)
                   : o.get_int("loops", 1, 1, kMaxLoops);
  } catch (const InputError& e) {
    throw InputError(name + " " + e.what());
  }
  if (o.has("proto") && !parse_protocol(o.get_string("proto", ""))) {
    throw InputError(name + " option proto=" + o.get_string("proto", "") +
                     ": not one of " + std::string(kProtocolNames) + " (NCCL_PROTO's names)");
  }
  const long long chunks = static_cast<long long>(s.channels) * s.parts * (tree ? 1 : n);
  if (chunks > kMaxChunks) {
    throw InputError(name + ": channels=" + std::to_string(s.channels) + " x " +
                     (tree ? "segments=" : "loops=") + std::to_string(s.parts) +
                     (tree ? "" : " x " + std::to_string(n) + " ranks") + " = " +
                     std::to_string(chunks) + " chunks, more than " + std::to_string(kMaxChunks));
  }
  return s;
}

int mod(int a, int m) { return ((a % m) + m) % m; }

// The locals of node `node` in channel c's ring, from its entry to its exit (see the header).
std::vector<int> ring_path_in_node(int c, int node, int g, int nodes) {
  const int a = mod(c, g);
  std::vector<int> path;
  path.reserve(static_cast<std::size_t>(g));
  if (nodes == 1 || g == 1) {
    for (int i = 0; i < g; ++i) path.push_back(mod(a + i, g));
    return path;
  }
  auto rail = [&](int j) {  // the local channel c enters node j on (j = nodes: node 0 again)
    if (j == nodes) j = 0;
    if (nodes % 2 == 1 && j == nodes - 1 && g >= 3) return mod(a + 2, g);
    return mod(a + (j % 2), g);
  };
  const int entry = rail(node);
  int exit = rail(node + 1);
  if (exit == entry) exit = mod(entry + 1, g);  // G = 2, odd node count: the last node
  path.push_back(entry);
  for (int i = 1; i < g; ++i) {
    const int local = mod(entry + i, g);
    if (local != exit) path.push_back(local);
  }
  path.push_back(exit);
  return path;
}

// Channel c's ring over all ranks: the node paths concatenated, node 0 first.
std::vector<int> channel_ring(int c, int g, int nodes) {
  std::vector<int> ring;
  ring.reserve(static_cast<std::size_t>(g) * static_cast<std::size_t>(nodes));
  for (int j = 0; j < nodes; ++j) {
    for (int local : ring_path_in_node(c, j, g, nodes)) ring.push_back(j * g + local);
  }
  return ring;
}

RoundStream nccl_ring_rounds(NcclShape s) {
  const int n = s.n, channels = s.channels;
  std::vector<std::vector<int>> rings;
  rings.reserve(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) rings.push_back(channel_ring(c, s.g, s.nodes));
  Round round;
  round.transfers.resize(static_cast<std::size_t>(channels) * static_cast<std::size_t>(n));
  for (int c = 0; c < channels; ++c) {
    const std::vector<int>& ring = rings[static_cast<std::size_t>(c)];
    for (int i = 0; i < n; ++i) {
      Transfer& t = round.transfers[static_cast<std::size_t>(c) * n + i];
      t.src = ring[static_cast<std::size_t>(i)];
      t.dst = ring[static_cast<std::size_t>(i + 1 == n ? 0 : i + 1)];
    }
  }
  rings.clear();
  rings.shrink_to_fit();
  for (int l = 0; l < s.parts; ++l) {
    for (int k = 0; k < 2 * (n - 1); ++k) {
      const bool reduce = k < n - 1;
      round.phase = reduce ? "reduce-scatter" : "allgather";
      // Reduce-scatter step k: position i sends chunk (i - k - 1) mod n; allgather step k'
      // = k - (n-1): position i forwards chunk (i - k') mod n (ring.cpp).
      const int shift = reduce ? k + 1 : k - (n - 1);
      for (int c = 0; c < channels; ++c) {
        const int base = (l * channels + c) * n;
        int chunk = mod(-shift, n);
        Transfer* t = &round.transfers[static_cast<std::size_t>(c) * n];
        for (int i = 0; i < n; ++i, ++t) {
          t->chunk_begin = base + chunk;
          t->chunk_end = base + chunk + 1;
          t->op = reduce ? Op::reduce : Op::copy;
          chunk = chunk + 1 == n ? 0 : chunk + 1;
        }
      }
      co_yield round;
    }
  }
}

GeneratedRounds make_nccl_ring(int n, const Options& o) {
  NcclShape s = checked_nccl_shape("nccl_ring", n, o, false);
  const int chunks = s.channels * s.parts * n;
  const std::size_t rounds =
      static_cast<std::size_t>(s.parts) * 2 * static_cast<std::size_t>(n - 1);
  return {Schedule::make(Collective::allreduce, "nccl_ring", n, chunks), nccl_ring_rounds(s),
          rounds};
}

}  // namespace

// NCCL's binary tree over `nodes` indices rooted at 0 (trees.cc, ncclGetBtree's rule, our code):
// parent of every index, -1 for the root.
std::vector<int> nccl_btree_parents(int nodes) {
  std::vector<int> parent(static_cast<std::size_t>(nodes), -1);
  for (int j = 1; j < nodes; ++j) {
    const int bit = j & -j;  // lowest set bit
    int up = (j ^ bit) | (bit << 1);
    if (up >= nodes) up = j ^ bit;
    parent[static_cast<std::size_t>(j)] = up;
  }
  return parent;
}

// Tree `which` (0 or 1) of NCCL's double binary tree over `nodes` indices (ncclGetDtree's rule):
// tree 1 mirrors tree 0 for an even count and shifts it by one for an odd count.
std::vector<int> nccl_dtree_parents(int nodes, int which) {
  const std::vector<int> t0 = nccl_btree_parents(nodes);
  if (which == 0 || nodes == 1) return t0;
  std::vector<int> t1(static_cast<std::size_t>(nodes), -1);
  for (int j = 0; j < nodes; ++j) {
    int u = -1;
    if (nodes % 2 == 0) {
      const int p = t0[static_cast<std::size_t>(nodes - 1 - j)];
      u = p < 0 ? -1 : nodes - 1 - p;
    } else {
      const int p = t0[static_cast<std::size_t>(mod(j - 1, nodes))];
      u = p < 0 ? -1 : (p + 1) % nodes;
    }
    t1[static_cast<std::size_t>(j)] = u;
  }
  return t1;
}

namespace {

// Channel c's tree over all ranks: parent rank (-1 at the root) and depth of every rank.
struct RankTree {
  std::vector<int> parent;
  std::vector<int> depth;
  int deepest = 0;
};

RankTree channel_tree(int c, int g, int nodes) {
  const std::vector<int> node_parent = nccl_dtree_parents(nodes, c % 2);
  std::vector<int> node_depth(static_cast<std::size_t>(nodes), -1);
  for (int j = 0; j < nodes; ++j) {  // depth by walking up (log depth: cheap)
    int d = 0;
    for (int k = j; node_parent[static_cast<std::size_t>(k)] >= 0;
         k = node_parent[static_cast<std::size_t>(k)])
      ++d;
    node_depth[static_cast<std::size_t>(j)] = d;
  }
  const int h = mod(c / 2, g);
  const std::size_t n = static_cast<std::size_t>(g) * static_cast<std::size_t>(nodes);
  RankTree t{std::vector<int>(n, -1), std::vector<int>(n, 0), 0};
  for (int j = 0; j < nodes; ++j) {
    for (int i = 0; i < g; ++i) {
      const int rank = j * g + mod(h + i, g);
      int parent = -1;
      if (i > 0) {
        parent = j * g + mod(h + i - 1, g);
      } else if (node_parent[static_cast<std::size_t>(j)] >= 0) {
        parent = node_parent[static_cast<std::size_t>(j)] * g + h;
      }
      const int depth = node_depth[static_cast<std::size_t>(j)] + i;
      t.parent[static_cast<std::size_t>(rank)] = parent;
      t.depth[static_cast<std::size_t>(rank)] = depth;
      t.deepest = std::max(t.deepest, depth);
    }
  }
  return t;
}

RoundStream nccl_tree_rounds(NcclShape s) {
  const int n = s.n, channels = s.channels, segments = s.parts;
  std::vector<RankTree> trees;
  trees.reserve(static_cast<std::size_t>(channels));
  int steps = 0;
  for (int c = 0; c < channels; ++c) {
    trees.push_back(channel_tree(c, s.g, s.nodes));
    steps = std::max(steps, segments + 2 * trees.back().deepest - 1);
  }
  Round round;
  for (int step = 0; step < steps; ++step) {
    round.transfers.clear();
    for (int c = 0; c < channels; ++c) {
      const RankTree& t = trees[static_cast<std::size_t>(c)];
      const int deepest = t.deepest;
      const int base = c * segments;
      for (int r = 0; r < n; ++r) {  // up: reduce into the parent
        const int parent = t.parent[static_cast<std::size_t>(r)];
        const int j = step - (deepest - t.depth[static_cast<std::size_t>(r)]);
        if (parent >= 0 && j >= 0 && j < segments)
          round.add(r, parent, base + j, base + j + 1, Op::reduce);
      }
      for (int r = 0; r < n; ++r) {  // down: the parent forwards the result
        const int parent = t.parent[static_cast<std::size_t>(r)];
        const int j = step - deepest - (t.depth[static_cast<std::size_t>(r)] - 1);
        if (parent >= 0 && j >= 0 && j < segments)
          round.add(parent, r, base + j, base + j + 1, Op::copy);
      }
    }
    round.phase = "tree";
    if (!round.transfers.empty()) co_yield round;
  }
}

GeneratedRounds make_nccl_tree(int n, const Options& o) {
  NcclShape s = checked_nccl_shape("nccl_tree", n, o, true);
  const int chunks = s.channels * s.parts;
  return {Schedule::make(Collective::allreduce, "nccl_tree", n, chunks), nccl_tree_rounds(s),
          std::nullopt};
}

// Deepest depth over the channels' trees (the node tree's depth plus G - 1).
int nccl_tree_deepest(const NcclShape& s) {
  int deepest = 0;
  for (int which = 0; which < std::min(2, s.channels); ++which) {
    const std::vector<int> p = nccl_dtree_parents(s.nodes, which);
    for (int j = 0; j < s.nodes; ++j) {
      int d = 0;
      for (int k = j; p[static_cast<std::size_t>(k)] >= 0; k = p[static_cast<std::size_t>(k)]) ++d;
      deepest = std::max(deepest, d + s.g - 1);
    }
  }
  return deepest;
}

std::vector<OptionSpec> nccl_common_options(bool tree) {
  return {
      {"gpus_per_node",
       "GPUs per node G, dividing n (rank = node*G + local); experiments take it from a "
       "hierarchical topology",
       "n (one node)"},
      {"channels",
       "NCCL's channels (NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS): C parts of the "
       "buffer, each with its own ring or tree, 1.." +
           std::to_string(kNcclMaxChannels),
       std::string(tree ? "2 x " : "") + "min(G, " + std::to_string(kDefaultChannelsCap) +
           ") across nodes, 1 on one node"},
      {"proto",
       "NCCL's protocol the transfers move with (NCCL_PROTO): simple, ll or ll128; data only, "
       "what each costs is the simulator's (docs/algorithms.md \"Protocols\")",
       "simple"},
  };
}

}  // namespace

AlgorithmInfo nccl_ring_info() {
  std::vector<OptionSpec> options = nccl_common_options(false);
  options.push_back({"loops",
                     "parts of each channel's share run one after another, each a full ring "
                     "(NCCL's loops: size / (C n chunkSize)), 1.." +
                         std::to_string(kMaxLoops),
                     "1"});
  return AlgorithmInfo{
      .name = "nccl_ring",
      .description =
          "NCCL_ALGO=Ring: C channels, each a ring reduce-scatter + allgather over its share "
          "(2(n-1) steps per loop), entering and leaving every node on a different rail; "
          "gpus_per_node must divide n",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = std::move(options),
      .rounds = make_nccl_ring,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            const NcclShape s = checked_nccl_shape("nccl_ring", n, o, false);
            return nccl_ring_cost(n, bytes, s.channels, s.parts, p);
          },
      // Chunks C L n; rounds 2(n-1) L; C n transfers per round; pairs: at most C n (each
      // channel's ring has n edges).
      .size =
          [](int n, const Options& o) {
            const NcclShape s = checked_nccl_shape("nccl_ring", n, o, false);
            const double r = n, c = s.channels, l = s.parts;
            const double rounds = 2 * (r - 1) * l;
            return ScheduleSize{c * l * r, rounds, rounds * c * r, c * r, std::min(c, r - 1) * r};
          },
      .check_options = [](int n,
                          const Options& o) { (void)checked_nccl_shape("nccl_ring", n, o, false); },
  };
}

AlgorithmInfo nccl_tree_info() {
  std::vector<OptionSpec> options = nccl_common_options(true);
  options.push_back(
      {"segments",
       "segments each channel's share is pipelined in, 1.." + std::to_string(kMaxTreeSegments),
       std::to_string(kDefaultTreeSegments)});
  return AlgorithmInfo{
      .name = "nccl_tree",
      .description =
          "NCCL_ALGO=Tree: NCCL's double binary tree across nodes (channel c on tree c mod 2), "
          "a chain inside every node, reduce up and broadcast down pipelined in segments; "
          "gpus_per_node must divide n",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = std::move(options),
      .rounds = make_nccl_tree,
      // No closed form (a head serves its chain and up to two child nodes): the schedule's
      // exact cost under the IR's semantics.
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options& o) { return schedule_cost(generate("nccl_tree", n, o), bytes, p); },
      // Chunks C P; rounds P + 2D - 1; per round at most 2 transfers per channel and non-root
      // rank; pairs: every tree edge both ways, per tree (2 distinct trees).
      .size =
          [](int n, const Options& o) {
            const NcclShape s = checked_nccl_shape("nccl_tree", n, o, true);
            const double r = n, c = s.channels, seg = s.parts;
            const double rounds = seg + 2.0 * nccl_tree_deepest(s) - 1;
            const double trees = std::min(c, 2.0 * s.g);
            return ScheduleSize{c * seg, rounds, 2 * c * seg * (r - 1), 2 * c * (r - 1),
                                2 * trees * (r - 1)};
          },
      .check_options = [](int n,
                          const Options& o) { (void)checked_nccl_shape("nccl_tree", n, o, true); },
  };
}

// nccl: what NCCL runs, named by NCCL_ALGO's algorithm (option algo: ring, tree, nvls,
// nvls_tree, collnet_direct, collnet_chain, which run the schedules nccl_ring, nccl_tree, nvls,
// nvls_tree, collnet_direct, collnet_chain) and NCCL_PROTO's protocol (option proto). Which algorithm, protocol and channel count NCCL would pick for a size on a
// machine is NCCL's cost estimate over the machine (sim/nccl_tuner.hpp), which this layer cannot
// know: the simulator fills algo, proto and channels before it generates the schedule; asked for
// here without algo, the schedule is NCCL's Ring with its defaults (nccl_ring's).
namespace {

constexpr const char* kNcclAlgos = "ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain";

// The validated algo (empty when not given); InputError for unknown and not-modelled ones and
// for a protocol the algorithm does not run.
std::string nccl_algo_of(const Options& o) {
  const std::string algo = lowercase(o.get_string("algo", ""));
  const bool known = algo.empty() || algo == "ring" || algo == "tree" || algo == "nvls" ||
                     algo == "nvls_tree" || algo == "collnet_direct" || algo == "collnet_chain";
  if (!known) {
    throw InputError("nccl option algo=" + o.get_string("algo", "") + ": not one of " +
                     kNcclAlgos + " (NCCL_ALGO's names)");
  }
  std::optional<Protocol> proto;
  if (o.has("proto")) {
    proto = parse_protocol(o.get_string("proto", ""));
    if (!proto) {
      throw InputError("nccl option proto=" + o.get_string("proto", "") + ": not one of " +
                       std::string(kProtocolNames) + " (NCCL_PROTO's names)");
    }
  }
  // tuning.cc: NVLS and NVLS_TREE are skipped for LL and LL128; CollNet Direct and Chain get
  // no bandwidth for them ("Not used"): Simple only.
  if ((algo == "nvls" || algo == "nvls_tree" || algo == "collnet_direct" ||
       algo == "collnet_chain") &&
      proto && *proto != Protocol::simple) {
    const char* nccl_name = algo == "nvls"             ? "NVLS"
                            : algo == "nvls_tree"      ? "NVLS_TREE"
                            : algo == "collnet_direct" ? "CollNetDirect"
                                                       : "CollNetChain";
    throw InputError("nccl option proto=" + std::string(to_string(*proto)) + " with algo=" +
                     algo + ": NCCL runs " + nccl_name +
                     " with the Simple protocol only (allowed: simple)");
  }
  return algo;
}

// The options of the schedule nccl generates for `algo` (its own name's options).
Options nccl_inner_options(const Options& o) {
  Options inner;
  for (const auto& [key, value] : o.values()) {
    if (key != "algo" && key != "pipeline") inner.set(key, value);
  }
  return inner;
}

// The options of the nvls (nvls_tree) schedule nccl generates with algo=nvls (nvls_tree): its
// pipeline depth (and the node size).
Options nccl_nvls_options(const Options& o, bool tree = false) {
  Options plain;
  if (o.has("pipeline")) plain.set("pipeline", o.get_string("pipeline", "1"));
  if (tree && o.has("gpus_per_node")) plain.set("gpus_per_node", o.get_string("gpus_per_node", ""));
  return plain;
}

// The options of the collnet_direct (collnet_chain) schedule nccl generates with
// algo=collnet_direct (collnet_chain): the node size (nccl's default: one node, which CollNet
// refuses), the pipeline depth (channels and segments).
Options nccl_collnet_options(int n, const Options& o, bool chain) {
  if (!o.has("gpus_per_node")) {
    throw InputError("nccl option algo=" + std::string(chain ? "collnet_chain" : "collnet_direct") +
                     ": CollNet reduces across nodes in the fabric's switches, and without "
                     "gpus_per_node the " +
                     std::to_string(n) + " ranks are one node (give gpus_per_node, or a "
                     "hierarchical topology whose fabric reduces)");
  }
  Options plain;
  plain.set("gpus_per_node", o.get_string("gpus_per_node", ""));
  const std::vector<std::string> keys =
      chain ? std::vector<std::string>{"channels", "segments"} : std::vector<std::string>{"pipeline"};
  for (const std::string& key : keys) {
    if (o.has(key)) plain.set(key, o.get_string(key, ""));
  }
  return plain;
}

GeneratedRounds make_nccl(int n, const Options& o) {
  // Without algo (a schedule asked for without a machine: `stragglesim schedule nccl`), Ring
  // with its defaults; simulate, run and advise fill algo, proto and channels first.
  std::string algo = nccl_algo_of(o);
  if (algo.empty()) algo = "ring";
  GeneratedRounds g;
  if (algo == "nvls") {
    g = nvls_info().rounds(n, nccl_nvls_options(o));  // the protocol is Simple
  } else if (algo == "nvls_tree") {
    g = nvls_tree_info().rounds(n, nccl_nvls_options(o, true));
  } else if (algo == "collnet_direct") {
    g = collnet_direct_info().rounds(n, nccl_collnet_options(n, o, false));
  } else if (algo == "collnet_chain") {
    g = collnet_chain_info().rounds(n, nccl_collnet_options(n, o, true));
  } else {
    g = (algo == "ring" ? nccl_ring_info() : nccl_tree_info()).rounds(n, nccl_inner_options(o));
  }
  g.header.algorithm = "nccl";
  return g;
}

}  // namespace

AlgorithmInfo nccl_info() {
  std::vector<OptionSpec> options = nccl_common_options(false);
  options.push_back({"algo",
                     std::string("NCCL_ALGO: ") + kNcclAlgos +
                         " (the schedules nccl_ring, nccl_tree, nvls, nvls_tree, collnet_direct, "
                         "collnet_chain); absent: "
                         "NCCL's own choice for the size and machine (sim/nccl_tuner.hpp) in "
                         "simulate, run and advise, ring for a schedule on its own",
                     "NCCL's choice"});
  for (OptionSpec& spec : options) {
    if (spec.name == "proto") spec.default_value = "NCCL's choice (simple with algo=)";
    if (spec.name == "channels") spec.default_value = "NCCL's choice (the default of algo=)";
  }
  options.push_back({"loops", "as nccl_ring's (algo=ring)", "1"});
  options.push_back({"segments", "as nccl_tree's and collnet_chain's (algo=tree, collnet_chain)",
                     std::to_string(kDefaultTreeSegments)});
  options.push_back({"pipeline",
                     "as nvls's, nvls_tree's and collnet_direct's (algo=nvls, nvls_tree, "
                     "collnet_direct): slices; NCCL's choice takes the depth of least estimated "
                     "time on the machine",
                     "1"});
  return AlgorithmInfo{
      .name = "nccl",
      .description =
          "what NCCL runs: NCCL's choice of algorithm (ring, tree, nvls, nvls_tree, "
          "collnet_direct, collnet_chain), protocol (simple, ll, ll128) and channels by its own cost model for the size and machine, or the ones "
          "forced with algo= and proto=",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = std::move(options),
      .rounds = make_nccl,
      // The closed form of the schedule generate() gives: the algorithm given, Ring without
      // one (NCCL's own choice is the simulator's, with the machine).
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            const std::string algo = nccl_algo_of(o);
            const Options inner = nccl_inner_options(o);
            if (algo == "nvls") return nvls_info().cost(n, bytes, p, nccl_nvls_options(o));
            if (algo == "nvls_tree")
              return nvls_tree_info().cost(n, bytes, p, nccl_nvls_options(o, true));
            if (algo == "collnet_direct")
              return collnet_direct_info().cost(n, bytes, p, nccl_collnet_options(n, o, false));
            if (algo == "collnet_chain")
              return collnet_chain_info().cost(n, bytes, p, nccl_collnet_options(n, o, true));
            if (algo == "tree") return nccl_tree_info().cost(n, bytes, p, inner);
            return nccl_ring_info().cost(n, bytes, p, inner);
          },
      // The algorithm's bound; without algo the larger of Ring's and Tree's for the channels
      // NCCL's choice may run (at most 2 x min(G, 8) across nodes, 16 on one node:
      // sim/nccl_tuner.hpp), which generate() without a machine does not make.
      .size =
          [](int n, const Options& o) {
            const std::string algo = nccl_algo_of(o);
            if (algo == "nvls") return nvls_info().size(n, nccl_nvls_options(o));
            if (algo == "nvls_tree") return nvls_tree_info().size(n, nccl_nvls_options(o, true));
            if (algo == "collnet_direct")
              return collnet_direct_info().size(n, nccl_collnet_options(n, o, false));
            if (algo == "collnet_chain")
              return collnet_chain_info().size(n, nccl_collnet_options(n, o, true));
            // Without algo the tuner picks the channels later: up to 16 (sim/nccl_tuner.cpp).
            Options inner = nccl_inner_options(o);
            if (algo.empty() && !inner.has("channels")) inner.set("channels", "16");
            const ScheduleSize r = nccl_ring_info().size(n, inner);
            const ScheduleSize t = nccl_tree_info().size(n, inner);
            if (algo == "ring") return r;
            if (algo == "tree") return t;
            return ScheduleSize{std::max(r.chunks, t.chunks), std::max(r.rounds, t.rounds),
                                std::max(r.transfers, t.transfers),
                                std::max(r.largest_round, t.largest_round),
                                std::max(r.pairs, t.pairs)};
          },
      .check_options =
          [](int n, const Options& o) {
            const std::string algo = nccl_algo_of(o);
            if (algo == "nvls_tree") {
              nvls_tree_info().check_options(n, nccl_nvls_options(o, true));
            } else if (algo == "collnet_direct" || algo == "collnet_chain") {
              // Without gpus_per_node (one node) the machine refuses it (sim/nccl_tuner.hpp,
              // with the topology's words); the other options are checked here.
              const bool chain = algo == "collnet_chain";
              Options given = o;
              if (!given.has("gpus_per_node")) given.set("gpus_per_node", "1");
              (chain ? collnet_chain_info() : collnet_direct_info())
                  .check_options(n, nccl_collnet_options(n, given, chain));
            } else if (algo != "nvls") {
              (void)checked_nccl_shape("nccl", n, nccl_inner_options(o), algo == "tree");
            }
          },
      // Its schedule is the kernel of the algorithm its algo option names (nvls, nvls_tree, ...).
      .kernel_option = "algo",
  };
}

}  // namespace ssim::alg
