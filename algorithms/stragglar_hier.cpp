// Multi-node StragglAR: the hierarchical AllReduce (hierarchical.cpp) run without the straggler
// while it is late, the straggler folded in by StragglAR-style exchanges inside its own node
// (NVLink), and the result sent across the rails from the straggler's node.
//
// Ranks nodes x G (rank = node*G + local, G >= 2), straggler s on node S with local ls, its
// proxy q = (S, ls-1 mod G). Piece l (of G) is owned by local l; it is cut into B = N*segments
// chunks (G*B in all). X = sum of the n-1 early ranks' buffers, R = X + x_s the result.
// Phase 1 (s absent; nothing below touches s):
//   "reduce-scatter"  (G-1 rounds) ring ReduceScatter of the pieces in every node. In node S
//                     s plays a ring member with zero data hosted by q: its receives are
//                     dropped and its sends come from q, one round late (in ring step k
//                     member ls forwards what ls-1 = q sent it in step k-1, and q's copy of that
//                     chunk does not change in between); step 0's send of s (its own raw
//                     chunk) is dropped. Afterwards (j,l) holds piece l summed over node j, q
//                     also piece ls summed over node S's early ranks.
//   "inter-reduce-scatter", "inter-allgather"  (2(N-1) rounds, N >= 2) ring AllReduce of
//                     piece l across the nodes on every rail l, N blocks of `segments` chunks;
//                     on rail ls node S's member is q (which then serves two rails). Every
//                     early rank (j,l) now holds X_l, q also X_ls.
// Phase 2 (s has arrived):
//   "straggler-exchange"  (G x P rounds, P = 2 parts of B/2 chunks when B is even and N >= 2,
//                     else 1) s swaps part e of piece l with (S,l) (piece ls with q) in round
//                     e*G + (l - ls mod G): both
//                     reduce, so both hold that part of R_l (s ends with all of R).
//   chains            on every rail l a pipelined chain from (S,l) (s itself on rail ls) through
//                     nodes S+1, S+2, ... copies R_l's B chunks, one chunk per link per round,
//                     each chunk as soon as its part is exchanged (the chains overlap the
//                     exchanges; rounds after the last exchange are labelled "rail-broadcast").
//   "allgather"       (G-1 rounds) ring AllGather of the pieces in every node.
// Rounds: phase 1 G-1 + 2(N-1) (none for G = 2, N = 1), then max(G*P, the chains' end),
// then G-1. Each rank sends at most one and receives at most one transfer per round except q
// in the inter phase (two rails) and s and the (S,l) in phase 2 (an exchange and a chain send).
// The straggler's data never crosses a NIC before it is reduced into the result, and its only
// NIC traffic is rail ls's chain; the other nodes wait for nothing but R's chunks. No closed
// form (chains fed at staggered times): `.cost` is schedule_cost of the generated schedule,
// and tests check it against a hand-derived case.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

constexpr int kDefaultSegments = 4;
constexpr int kMaxSegments = 4096;

struct HierShape {
  int g = 0, nodes = 0, b = 0, segments = 0;
  int s = 0, node_s = 0, ls = 0, q = 0;  // straggler, its node and local index, its proxy
};

HierShape checked_hier(int n, const Options& options) {
  HierShape h;
  if (n < 2) throw InputError("stragglar_hier needs at least 2 ranks");
  h.g = checked_gpus_per_node("stragglar_hier", n, options, 2);
  h.nodes = n / h.g;
  h.segments = options.get_int("segments", kDefaultSegments, 1, kMaxSegments);
  h.b = h.nodes * h.segments;
  if (static_cast<long long>(h.b) * h.g > (1LL << 30)) {
    throw InputError("stragglar_hier: " + std::to_string(h.g) + " x " + std::to_string(h.b) +
                     " chunks is too many (lower segments)");
  }
  h.s = options.get_int("straggler", n - 1, 0, n - 1);
  h.node_s = h.s / h.g;
  h.ls = h.s % h.g;
  h.q = h.node_s * h.g + (h.ls + h.g - 1) % h.g;
  return h;
}

// The exchanges of a piece come in this many parts (N >= 2): 2 when the piece's chunk count
// allows, so that s, which also feeds rail ls's chain, spreads its exchanges over about as
// many rounds as it has chain sends (each rank's rounds run in order: with more parts s's
// exchanges would wait for its slower NIC sends, with one part the chains start late).
int exchange_parts(const HierShape& h) { return h.nodes >= 2 && h.b % 2 == 0 ? 2 : 1; }

RoundStream stragglar_hier_rounds(HierShape h) {
  const int g = h.g, nodes = h.nodes, b = h.b;
  const int q_local = (h.ls + g - 1) % g;
  Round round;

  // Phase 1: intra-node reduce-scatter, s virtualized in node S.
  {
    std::vector<RoundStream> rings;
    for (int j = 0; j < nodes; ++j)
      rings.push_back(ring_reduce_scatter_rounds(iota_ranks(g), 0, ""));
    Round local;
    for (int k = 0;; ++k) {
      round.phase = "reduce-scatter";
      round.transfers.clear();
      bool more = true;
      for (int j = 0; j < nodes && more; ++j) {
        const Round* r = rings[static_cast<std::size_t>(j)].next();
        more = r != nullptr;
        if (!more) break;
        if (j != h.node_s) {
          append_mapped(round, *r, node_members(j, g), 0, b);
          continue;
        }
        local.transfers.clear();
        for (Transfer t : r->transfers) {
          if (t.dst == h.ls) continue;
          if (t.src == h.ls) {
            if (k == 0) continue;
            t.src = q_local;
          }
          local.transfers.push_back(t);
        }
        append_mapped(round, local, node_members(j, g), 0, b);
      }
      if (!more) break;
      if (!round.transfers.empty()) co_yield round;
    }
  }

  // Phase 1: ring allreduce per rail, q standing in for s on rail ls.
  if (nodes >= 2) {
    std::vector<RoundStream> rails;
    std::vector<std::vector<int>> members;
    for (int l = 0; l < g; ++l) {
      rails.push_back(generate_rounds("ring", nodes, Options{}).stream);
      members.push_back(rail_members(l, g, nodes));
      if (l == h.ls) members.back()[static_cast<std::size_t>(h.node_s)] = h.q;
    }
    bool more = true;
    while (more) {
      round.transfers.clear();
      for (int l = 0; l < g && more; ++l) {
        const Round* r = rails[static_cast<std::size_t>(l)].next();
        more = r != nullptr;
        if (!more) break;
        round.phase = "inter-" + r->phase;
        append_mapped(round, *r, members[static_cast<std::size_t>(l)], l * b, h.segments);
      }
      if (more) co_yield round;
    }
  }

  // Phase 2: the straggler's exchanges inside node S, in parts of N chunks (one part of every
  // piece per sweep, piece ls with q first), and per rail a pipelined chain from node S that
  // sends each chunk as soon as its part is exchanged: chunk k of piece l (exchange index i)
  // is ready after round (k / N) * G + i; a position sends one chunk per round, in order.
  {
    const int parts = exchange_parts(h);
    const int part_len = b / parts;
    const int exchange_rounds = g * parts;
    // chain[t]: the chain transfers of round t.
    std::vector<std::vector<Transfer>> chain;
    if (nodes >= 2) {
      std::vector<int> sent(static_cast<std::size_t>(b));
      for (int i = 0; i < g; ++i) {
        const int l = (h.ls + i) % g;
        for (int pos = 0; pos + 1 < nodes; ++pos) {
          const int from = (h.node_s + pos) % nodes * g + l;
          const int to = (h.node_s + pos + 1) % nodes * g + l;
          for (int k = 0; k < b; ++k) {
            const int ready = pos == 0 ? (k / part_len) * g + i : sent[static_cast<std::size_t>(k)];
            int t = ready + 1;
            if (k > 0) t = std::max(t, sent[static_cast<std::size_t>(k - 1)] + 1);
            // sent[] holds this position's times for chunks < k, the previous one's for >= k.
            sent[static_cast<std::size_t>(k)] = t;
            if (static_cast<int>(chain.size()) <= t) chain.resize(static_cast<std::size_t>(t) + 1);
            chain[static_cast<std::size_t>(t)].push_back(
                Transfer{from, to, l * b + k, l * b + k + 1, Op::copy});
          }
        }
      }
    }
    const int total = std::max(exchange_rounds, static_cast<int>(chain.size()));
    for (int t = 0; t < total; ++t) {
      round.transfers.clear();
      round.phase = t < exchange_rounds ? "straggler-exchange" : "rail-broadcast";
      if (t < exchange_rounds) {
        const int i = t % g, part = t / g;
        const int l = (h.ls + i) % g;
        const int partner = i == 0 ? h.q : h.node_s * g + l;
        const int begin = l * b + part * part_len;
        round.add(h.s, partner, begin, begin + part_len, Op::reduce);
        round.add(partner, h.s, begin, begin + part_len, Op::reduce);
      }
      if (t < static_cast<int>(chain.size())) {
        for (const Transfer& x : chain[static_cast<std::size_t>(t)]) round.transfers.push_back(x);
      }
      if (!round.transfers.empty()) co_yield round;
    }
  }

  // Phase 2: intra-node allgather everywhere (s already holds all of R; copies are harmless).
  {
    std::vector<RoundStream> rings;
    for (int j = 0; j < nodes; ++j) rings.push_back(ring_allgather_rounds(iota_ranks(g), 0, ""));
    round.phase = "allgather";
    bool more = true;
    while (more) {
      round.transfers.clear();
      for (int j = 0; j < nodes && more; ++j) {
        const Round* r = rings[static_cast<std::size_t>(j)].next();
        more = r != nullptr;
        if (more) append_mapped(round, *r, node_members(j, g), 0, b);
      }
      if (more) co_yield round;
    }
  }
}

GeneratedRounds make_stragglar_hier(int n, const Options& options) {
  const HierShape h = checked_hier(n, options);
  GeneratedRounds out{Schedule::make(Collective::allreduce, "stragglar_hier", n, h.g * h.b),
                      stragglar_hier_rounds(h), std::nullopt};
  out.header.straggler = h.s;
  return out;
}

}  // namespace

AlgorithmInfo stragglar_hier_info() {
  return AlgorithmInfo{
      .name = "stragglar_hier",
      .description =
          "multi-node StragglAR: hierarchical reduce-scatter and per-rail allreduce without the "
          "straggler, exchanges with it inside its node, rail broadcast, intra-node allgather",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"straggler", "rank that arrives last", "n-1"},
                  {"gpus_per_node",
                   "GPUs per node G >= 2 (rank = node*G + local); experiments take it from a "
                   "hierarchical topology",
                   "n (one node)"},
                  {"segments", "chunks per node and piece: a piece has nodes*segments chunks",
                   std::to_string(kDefaultSegments)}},
      .rounds = make_stragglar_hier,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            return schedule_cost(generate("stragglar_hier", n, o), bytes, p);
          },
      // Chunks G*N*segments. Rounds: phase 1 G-1 + 2(N-1), exchanges G*parts, chains ending at
      // most B + 2N after them, allgather G-1. Transfers: phase 1 at most 2n per round, 2 per
      // exchange, B(N-1) per rail's chain, n per allgather round; at most 2n in a round;
      // pairs: node rings, rails (both directions), exchanges.
      .size =
          [](int n, const Options& o) {
            const HierShape h = checked_hier(n, o);
            const double r = n, g = h.g, nodes = h.nodes, b = h.b;
            const double parts = exchange_parts(h);
            const double phase1 = g - 1 + 2 * (nodes - 1);
            const double rounds = phase1 + g * parts + b + 2 * nodes + g - 1;
            const double transfers =
                phase1 * 2 * r + 2 * g * parts + g * b * (nodes - 1) + (g - 1) * r;
            return ScheduleSize{g * b, rounds, transfers, 2 * r + 2, 4 * r + 2 * g};
          },
      .straggler_aware = true,
      .check_options = [](int n, const Options& o) { checked_hier(n, o); },
  };
}

}  // namespace ssim::alg
