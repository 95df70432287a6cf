// Hierarchical AllReduce, the multi-node shape of NCCL-style libraries: ranks are
// nodes x gpus_per_node, rank = node * G + local (as the hierarchical topology numbers its GPUs).
// The buffer is cut into G pieces, piece l into B chunks (B = the inter-node algorithm's chunk
// count: N for ring, 2^floor(log2 N) for rhd and halving_doubling); G*B chunks in all.
//
//   1. "reduce-scatter": a ring ReduceScatter of the G pieces inside every node, all nodes at
//      once (G-1 rounds); local l then holds piece l summed over its node.
//   2. "inter-<phase>": per rail l (the ranks with local index l, one per node) an AllReduce of
//      piece l across the N nodes with the `inter` algorithm (ring, rhd or halving_doubling),
//      all rails at once, its rounds and phase labels as that algorithm generates them.
//   3. "allgather": a ring AllGather of the pieces inside every node (G-1 rounds).
//
// Cost (alpha-beta, nothing shared; s bytes): every rank of a node sits at the same position
// of its rail, so the ranks of a node finish each phase together and the phases add up:
//   T = (G-1)(alpha + s/G beta + s/G gamma) + T_inter(N, s/G) + (G-1)(alpha + s/G beta)
// with T_inter the inter algorithm's own closed form. G = n (one node) is ring; G = 1 is the
// inter algorithm over all ranks.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {

int checked_gpus_per_node(const std::string& algorithm, int n, const Options& options, int lo) {
  const std::string text = options.get_string("gpus_per_node", std::to_string(n));
  int g = 0;
  try {
    g = options.get_int("gpus_per_node", n, lo, n);
  } catch (const InputError& e) {
    throw InputError(algorithm + " " + e.what() + " (gpus_per_node must be " + std::to_string(lo) +
                     ".." + std::to_string(n) + " and divide the " + std::to_string(n) + " ranks)");
  }
  if (n % g != 0) {
    throw InputError(algorithm + " option gpus_per_node=" + text + ": must divide the rank count " +
                     std::to_string(n) + " (ranks = nodes x gpus_per_node)");
  }
  return g;
}

void append_mapped(Round& out, const Round& in, const std::vector<int>& members, int base,
                   int width) {
  for (const Transfer& t : in.transfers) {
    out.add(members[static_cast<std::size_t>(t.src)], members[static_cast<std::size_t>(t.dst)],
            base + t.chunk_begin * width, base + t.chunk_end * width, t.op);
  }
}

std::vector<int> node_members(int node, int g) {
  std::vector<int> v(static_cast<std::size_t>(g));
  for (int i = 0; i < g; ++i) v[static_cast<std::size_t>(i)] = node * g + i;
  return v;
}

std::vector<int> rail_members(int local, int g, int nodes) {
  std::vector<int> v(static_cast<std::size_t>(nodes));
  for (int j = 0; j < nodes; ++j) v[static_cast<std::size_t>(j)] = j * g + local;
  return v;
}

std::string checked_inter(const std::string& algorithm, const Options& options,
                          std::initializer_list<const char*> valid) {
  const std::string inter = options.get_string("inter", "ring");
  std::string list;
  for (const char* a : valid) {
    if (inter == a) return inter;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw InputError(algorithm + " option inter=" + inter +
                   ": unknown inter-node algorithm (valid: " + list + ")");
}

namespace {

struct Shape {
  int g = 0;      // GPUs per node
  int nodes = 0;  // N
  int b = 1;      // chunks per piece (the inter algorithm's chunk count; 1 for one node)
  std::string inter;
};

Shape checked_shape(int n, const Options& options) {
  Shape s;
  s.g = checked_gpus_per_node("hierarchical", n, options, 1);
  s.nodes = n / s.g;
  s.inter = checked_inter("hierarchical", options, {"ring", "rhd", "halving_doubling"});
  if (s.nodes >= 2) s.b = generate_rounds(s.inter, s.nodes, Options{}).header.chunks;
  return s;
}

// The G-member ring phases of every node at once, piece c of node j = chunks [c*b, (c+1)*b).
RoundStream intra_rounds(int nodes, int g, int b, bool reduce_scatter) {
  std::vector<RoundStream> rings;
  for (int j = 0; j < nodes; ++j) {
    rings.push_back(reduce_scatter ? ring_reduce_scatter_rounds(iota_ranks(g), 0, "")
                                   : ring_allgather_rounds(iota_ranks(g), 0, ""));
  }
  Round round{reduce_scatter ? "reduce-scatter" : "allgather", {}, {}};
  for (;;) {
    round.transfers.clear();
    for (int j = 0; j < nodes; ++j) {
      const Round* r = rings[static_cast<std::size_t>(j)].next();
      if (!r) co_return;
      append_mapped(round, *r, node_members(j, g), 0, b);
    }
    co_yield round;
  }
}

RoundStream hierarchical_rounds(Shape shape) {
  const int g = shape.g, nodes = shape.nodes, b = shape.b;
  RoundStream rs = intra_rounds(nodes, g, b, true);
  while (const Round* r = rs.next()) co_yield *r;
  if (nodes >= 2) {
    std::vector<RoundStream> rails;
    for (int l = 0; l < g; ++l)
      rails.push_back(generate_rounds(shape.inter, nodes, Options{}).stream);
    Round round;
    bool more = true;
    while (more) {
      round.transfers.clear();
      for (int l = 0; l < g && more; ++l) {
        const Round* r = rails[static_cast<std::size_t>(l)].next();
        more = r != nullptr;  // every rail has the same number of rounds
        if (!more) break;
        round.phase = "inter-" + r->phase;
        append_mapped(round, *r, rail_members(l, g, nodes), l * b, 1);
      }
      if (more) co_yield round;
    }
  }
  RoundStream ag = intra_rounds(nodes, g, b, false);
  while (const Round* r = ag.next()) co_yield *r;
}

GeneratedRounds make_hierarchical(int n, const Options& options) {
  Shape shape = checked_shape(n, options);
  const int chunks = shape.g * shape.b;
  return {Schedule::make(Collective::allreduce, "hierarchical", n, chunks),
          hierarchical_rounds(std::move(shape)), std::nullopt};
}

// collnet: SHARP in the inter-node switch. A ring reduce-scatter of the G pieces inside every
// node (G-1 rounds, as hierarchical), then one round in which rail l's switch (the switch the
// NICs of local l plug into: a rail of a rail-optimized fabric) sums piece l of the N nodes and
// multicasts the sum back to them, then a ring all-gather inside every node (G-1 rounds).
// Default G = 1: every GPU its own node, the whole buffer reduced by one switch.
int collnet_g(int n, const Options& o) {
  const int g = o.get_int("gpus_per_node", 1, 1, n);
  if (n % g != 0 || n / g < 2) {
    throw InputError("collnet option gpus_per_node=" + std::to_string(g) +
                     ": must divide the rank count " + std::to_string(n) +
                     " into at least 2 nodes (the switch reduces across nodes)");
  }
  return g;
}

RoundStream collnet_rounds(int nodes, int g) {
  RoundStream rs = intra_rounds(nodes, g, 1, true);
  while (const Round* r = rs.next()) co_yield *r;
  Round round;
  round.phase = "switch-allreduce";
  for (int l = 0; l < g; ++l) {
    std::vector<int> rail = rail_members(l, g, nodes);
    round.switch_reduces.push_back(SwitchReduce{rail, rail, l, l + 1});
  }
  co_yield round;
  RoundStream ag = intra_rounds(nodes, g, 1, false);
  while (const Round* r = ag.next()) co_yield *r;
}

GeneratedRounds make_collnet(int n, const Options& o) {
  const int g = collnet_g(n, o);
  return {Schedule::make(Collective::allreduce, "collnet", n, g), collnet_rounds(n / g, g),
          static_cast<std::size_t>(2 * (g - 1) + 1)};
}

}  // namespace

double collnet_cost(int n, double bytes, int g, const CostParams& intra, const CostParams& inter) {
  const double piece = bytes / g;
  (void)n;
  return ring_reduce_scatter_cost(g, bytes, intra) + inter.alpha + inter.switch_latency +
         std::max(piece * inter.beta, piece * inter.switch_beta) +
         (g - 1) * (intra.alpha + piece * intra.beta);
}

AlgorithmInfo collnet_info() {
  return AlgorithmInfo{
      .name = "collnet",
      .description =
          "SHARP (NCCL CollNet): intra-node ring reduce-scatter, each rail's inter-node switch "
          "reduces piece l across the nodes and multicasts it back, intra-node ring allgather; "
          "needs a reducing fabric switch per rail; (G-1)(2 alpha + 2 s/G beta) + alpha_f + "
          "lambda + max(s/G beta_f, s/G beta_r)",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"gpus_per_node",
                   "GPUs per node G, N = n/G >= 2 nodes (rank = node*G + local); experiments "
                   "take it from a hierarchical topology",
                   "1"}},
      .rounds = make_collnet,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options& o) { return collnet_cost(n, bytes, collnet_g(n, o), p, p); },
      // Chunks G; rounds 2(G-1) + 1; transfers n per intra round; pairs: the intra rings' n.
      .size =
          [](int n, const Options& o) {
            const double g = collnet_g(n, o), r = n, rounds = 2 * (g - 1) + 1;
            return ScheduleSize{g, rounds, (rounds - 1) * r, r, r};
          },
      .check_options = [](int n, const Options& o) { (void)collnet_g(n, o); },
      .in_network = true,
      .reduce_scope = AlgorithmInfo::ReduceScope::rails,
  };
}

double hierarchical_cost(int n, double bytes, const CostParams& p, const Options& options) {
  const Shape shape = checked_shape(n, options);
  const int g = shape.g;
  const double piece = bytes / g;
  double t = ring_reduce_scatter_cost(g, bytes, p) + (g - 1) * (p.alpha + piece * p.beta);
  if (shape.nodes >= 2) t += find_algorithm(shape.inter).cost(shape.nodes, piece, p, Options{});
  return t;
}

AlgorithmInfo hierarchical_info() {
  return AlgorithmInfo{
      .name = "hierarchical",
      .description =
          "intra-node ring reduce-scatter, inter-node allreduce per rail (ring, rhd or "
          "halving_doubling), intra-node ring allgather; gpus_per_node must divide n",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"gpus_per_node",
                   "GPUs per node G (rank = node*G + local); experiments take it from a "
                   "hierarchical topology",
                   "n (one node)"},
                  {"inter", "inter-node allreduce per rail: ring, rhd or halving_doubling",
                   "ring"}},
      .rounds = make_hierarchical,
      .cost = hierarchical_cost,
      // Chunks G*B <= n; rounds 2(G-1) + at most 2 ceil(log2 N) + 2 (rhd) or 2(N-1) (ring);
      // at most n transfers per round; pairs: the intra ring's n, plus per rail at most the
      // inter algorithm's.
      .size =
          [](int n, const Options& o) {
            const Shape s = checked_shape(n, o);
            const double r = n, g = s.g, nodes = s.nodes;
            const ScheduleSize inner =
                s.nodes >= 2 ? find_algorithm(s.inter).size(s.nodes, Options{}) : ScheduleSize{};
            const double rounds = 2 * (g - 1) + inner.rounds;
            return ScheduleSize{g * s.b, rounds, rounds * r, r, r + g * inner.pairs + nodes * g};
          },
      .check_options = [](int n, const Options& o) { checked_shape(n, o); },
      .one_node_equals = "ring",
  };
}

}  // namespace ssim::alg
