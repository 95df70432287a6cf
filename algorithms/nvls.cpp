// NCCL's single-node in-switch AllReduce (NVLS: NVLink SHARP on an NVSwitch), written with the
// IR's in-network reductions (SwitchReduce). The buffer is cut into `pipeline` slices of n
// chunks; chunk p*n + c of slice p is owned by rank c. Per slice, as NCCL's NVLS kernel does it:
//   reduce-scatter  the switch sums chunk c of every rank and returns it to rank c
//                   (multimem.ld_reduce);
//   all-gather      rank c multicasts its reduced chunk to every other rank (multimem.st).
// Round k reduces slice k and multicasts slice k-1, so the two directions of every link work at
// once (NCCL pipelines the same way, chunk by chunk). Two separate steps, not one "reduce and
// deliver to all" op: an NVSwitch returns a ld_reduce's sum to the GPU that issued it only.
//
// Cost in the alpha-beta model (DESIGN.md "In-network reductions": a round's reductions through
// one switch run as one batch, sharing the links and the switch's reduction bandwidth), n ranks
// on one switch, up and down links of 1/beta bytes/s and alpha GPU-to-GPU latency, reduction
// bandwidth 1/beta_r and latency lambda, q = s/P bytes per slice:
//   first round   alpha + lambda + max(q beta, q beta_r)              (up: q, down: q/n)
//   middle rounds alpha + lambda + max(q (1+1/n) beta, q beta_r)      (up: q + q/n, down: q)
//   last round    alpha + q (n-1)/n beta                               (multicast only)
//   T = (P+1) alpha + P lambda + max(q beta, q beta_r) + (P-1) max(q (1+1/n) beta, q beta_r)
//       + q (n-1)/n beta
// (chunk sizes as the IR cuts them; the closed form uses s/(nP) per chunk). For large P it
// tends to s (1+1/n) beta when the links are the bottleneck: every byte crosses a rank's link
// up once and its reduced value comes down once, plus the 1/n the owner multicasts.
#include <algorithm>

#include "algorithms/cost_model.hpp"
#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

constexpr int kMaxPipeline = 1024;

RoundStream nvls_rounds(int n, int slices) {
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
  Round round;
  for (int k = 0; k <= slices; ++k) {
    round.switch_reduces.clear();
    round.phase = k == 0        ? "switch-reduce-scatter"
                  : k == slices ? "switch-allgather"
                                : "switch-pipeline";
    if (k < slices) {
      for (int c = 0; c < n; ++c) {
        const int chunk = k * n + c;
        round.switch_reduces.push_back(SwitchReduce{all, {c}, chunk, chunk + 1});
      }
    }
    if (k >= 1) {
      for (int c = 0; c < n; ++c) {
        const int chunk = (k - 1) * n + c;
        std::vector<int> others;
        others.reserve(static_cast<std::size_t>(n - 1));
        for (int r = 0; r < n; ++r)
          if (r != c) others.push_back(r);
        round.switch_reduces.push_back(SwitchReduce{{c}, std::move(others), chunk, chunk + 1});
      }
    }
    co_yield round;
  }
}

int pipeline_of(const Options& o) { return o.get_int("pipeline", 1, 1, kMaxPipeline); }

GeneratedRounds make_nvls(int n, const Options& o) {
  const int slices = pipeline_of(o);
  return {Schedule::make(Collective::allreduce, "nvls", n, n * slices), nvls_rounds(n, slices),
          static_cast<std::size_t>(slices) + 1};
}

// nvls_tree: NVLS inside every node, an AllReduce across nodes per rail (ranks node*G + local)
// with the `inter` algorithm. The buffer is cut into G pieces of B chunks (B = the inter
// algorithm's chunk count; 1 for one node).
//   round 0     "switch-reduce-scatter": in every node at once, the node's NVSwitch sums piece
//               l of its G GPUs and returns it to local l (multimem.ld_reduce);
//   rounds      "inter-...": per rail l, the inter AllReduce of piece l across the N nodes, all
//               rails at once;
//   last round  "switch-allgather": local l multicasts piece l to the G-1 others of its node.
// inter = dbtree is NCCL's NVLS_TREE (NVLS in the node, its double binary tree across nodes);
// the default is a ring: per rail it is bandwidth-optimal (each NIC carries 2(N-1)/N of its
// piece), where a pipelined tree's inner ranks carry more.
struct TreeShape {
  int g = 0, nodes = 0, b = 1;
  int slices = 1;  // pipeline depth P
  std::string inter = "ring";
};

TreeShape nvls_tree_shape(int n, const Options& o) {
  TreeShape t;
  t.g = checked_gpus_per_node("nvls_tree", n, o, 2);
  t.nodes = n / t.g;
  t.inter = checked_inter("nvls_tree", o, {"ring", "rhd", "halving_doubling", "tree", "dbtree"});
  t.slices = pipeline_of(o);
  if (t.nodes >= 2) t.b = generate_rounds(t.inter, t.nodes, Options{}).header.chunks;
  return t;
}

// The inter algorithm's rounds on the shape's nodes (none for one node), kept: every slice
// plays them again on its own chunks.
std::vector<Round> inter_rounds_of(const TreeShape& t) {
  std::vector<Round> rounds;
  if (t.nodes < 2) return rounds;
  GeneratedRounds g = generate_rounds(t.inter, t.nodes, Options{});
  while (const Round* r = g.stream.next()) rounds.push_back(*r);
  return rounds;
}

// Rounds of the inter algorithm on the shape's nodes (0 for one node).
std::size_t inter_rounds(const TreeShape& t) {
  if (t.nodes < 2) return 0;
  GeneratedRounds g = generate_rounds(t.inter, t.nodes, Options{});
  if (g.round_count) return *g.round_count;
  std::size_t rounds = 0;
  while (g.stream.next()) ++rounds;
  return rounds;
}

// Slice p's stage `stage` appended to `round`: 0 the switch reduce-scatter, 1..R the inter
// algorithm's rounds per rail, R+1 the multicast all-gather. Slice p, piece l holds chunks
// [(p G + l) B, (p G + l + 1) B).
void append_stage(Round& round, const TreeShape& shape, const std::vector<Round>& inter, int p,
                  std::size_t stage) {
  const int g = shape.g, nodes = shape.nodes, b = shape.b;
  auto base = [&](int l) { return (p * g + l) * b; };
  if (stage == 0) {
    for (int j = 0; j < nodes; ++j) {
      const std::vector<int> members = node_members(j, g);
      for (int l = 0; l < g; ++l)
        round.switch_reduces.push_back(SwitchReduce{members, {j * g + l}, base(l), base(l) + b});
    }
  } else if (stage <= inter.size()) {
    for (int l = 0; l < g; ++l)
      append_mapped(round, inter[stage - 1], rail_members(l, g, nodes), base(l), 1);
  } else {
    for (int j = 0; j < nodes; ++j) {
      for (int l = 0; l < g; ++l) {
        std::vector<int> others;
        for (int i = 0; i < g; ++i)
          if (i != l) others.push_back(j * g + i);
        round.switch_reduces.push_back(
            SwitchReduce{{j * g + l}, std::move(others), base(l), base(l) + b});
      }
    }
  }
}

std::string stage_phase(const std::vector<Round>& inter, std::size_t stage) {
  if (stage == 0) return "switch-reduce-scatter";
  if (stage <= inter.size()) return "inter-" + inter[stage - 1].phase;
  return "switch-allgather";
}

// Round t holds stage t - p of every slice p that is in the pipeline then (P + R + 1 rounds):
// slice p reduces in its node while slice p - 1 crosses the nodes and an earlier one is
// multicast, as NCCL's NVLS_TREE kernel streams its chunks. With one slice the three phases
// follow each other.
RoundStream nvls_tree_rounds(TreeShape shape) {
  const std::vector<Round> inter = inter_rounds_of(shape);
  const std::size_t stages = inter.size() + 2;
  const std::size_t total = static_cast<std::size_t>(shape.slices) + stages - 1;
  Round round;
  for (std::size_t t = 0; t < total; ++t) {
    round.transfers.clear();
    round.switch_reduces.clear();
    std::string phase;
    for (int p = 0; p < shape.slices; ++p) {
      const std::size_t sp = static_cast<std::size_t>(p);
      if (t < sp || t - sp >= stages) continue;
      append_stage(round, shape, inter, p, t - sp);
      const std::string name = stage_phase(inter, t - sp);
      phase = phase.empty() || phase == name ? name : "pipeline";
    }
    round.phase = phase;
    co_yield round;
  }
}

GeneratedRounds make_nvls_tree(int n, const Options& o) {
  const TreeShape shape = nvls_tree_shape(n, o);
  const std::size_t rounds = static_cast<std::size_t>(shape.slices) + 1 + inter_rounds(shape);
  return {Schedule::make(Collective::allreduce, "nvls_tree", n, shape.slices * shape.g * shape.b),
          nvls_tree_rounds(shape), rounds};
}

}  // namespace

double nvls_tree_cost(int n, double bytes, int g, const CostParams& intra, const CostParams& inter,
                      const std::string& inter_algorithm) {
  const int nodes = n / g;
  const double piece = bytes / g;
  double t = 2 * intra.alpha + intra.switch_latency +
             std::max(bytes * intra.beta, bytes * intra.switch_beta) + piece * (g - 1) * intra.beta;
  if (nodes >= 2) t += find_algorithm(inter_algorithm).cost(nodes, piece, inter, Options{});
  return t;
}

AlgorithmInfo nvls_tree_info() {
  return AlgorithmInfo{
      .name = "nvls_tree",
      .description =
          "NVLS inside each node (the NVSwitch reduces, the owner multicasts), an AllReduce "
          "across the N nodes per rail (inter: ring, or dbtree as NCCL's NVLS_TREE); needs a "
          "reducing nvlink switch; gpus_per_node G must divide n; "
          "2 alpha + lambda + max(s beta, s beta_r) + (G-1)/G s beta + inter(N, s/G)",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"gpus_per_node",
                   "GPUs per node G >= 2 (rank = node*G + local); experiments take it from a "
                   "hierarchical topology",
                   "n (one node)"},
                  {"inter",
                   "AllReduce across nodes per rail: ring, rhd, halving_doubling, tree or dbtree "
                   "(NCCL's NVLS_TREE)",
                   "ring"},
                  {"pipeline",
                   "slices the buffer is cut into, streamed through the three phases (slice k "
                   "reduces in the node while slice k-1 crosses the nodes), 1..1024",
                   "1"}},
      .rounds = make_nvls_tree,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            const TreeShape t = nvls_tree_shape(n, o);
            if (t.slices > 1) {
              throw InputError("nvls_tree with pipeline=" + std::to_string(t.slices) +
                               " has no closed form (its slices overlap in the network): "
                               "simulate it instead");
            }
            return nvls_tree_cost(n, bytes, t.g, p, p, t.inter);
          },
      // Chunks P*G*B; rounds P + 1 + the inter algorithm's; per round at most G times one
      // inter round's transfers per slice in it (at most all of one slice's); pairs: the rails'
      // pairs, G times the inter algorithm's.
      .size =
          [](int n, const Options& o) {
            const TreeShape t = nvls_tree_shape(n, o);
            const ScheduleSize inner =
                t.nodes >= 2 ? find_algorithm(t.inter).size(t.nodes, Options{}) : ScheduleSize{};
            const double g = t.g, slices = t.slices, rounds = slices + 1.0 + inner.rounds;
            const double largest =
                t.slices == 1 ? g * inner.largest_round
                              : g * std::min(inner.transfers, inner.largest_round * slices);
            return ScheduleSize{slices * g * t.b, rounds, slices * g * inner.transfers, largest,
                                g * inner.pairs};
          },
      .check_options = [](int n, const Options& o) { (void)nvls_tree_shape(n, o); },
      .in_network = true,
      .reduce_scope = AlgorithmInfo::ReduceScope::nodes,
      .one_node_equals = "nvls",
      .nvls_kernel = true,
  };
}

double nvls_cost(int n, double bytes, int slices, const CostParams& p) {
  const double q = bytes / slices;
  const double up_first = q * p.beta, middle = q * (1.0 + 1.0 / n) * p.beta,
               reduce = q * p.switch_beta;
  return (slices + 1) * p.alpha + slices * p.switch_latency + std::max(up_first, reduce) +
         (slices - 1) * std::max(middle, reduce) + q * (n - 1) / n * p.beta;
}

AlgorithmInfo nvls_info() {
  return AlgorithmInfo{
      .name = "nvls",
      .description =
          "in-switch AllReduce (NCCL NVLS): the switch reduces each rank's chunk, the owner "
          "multicasts it; needs a reducing switch; ~2 alpha + s(1+1/n) beta pipelined",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"pipeline",
                   "slices the buffer is cut into; round k reduces slice k while "
                   "slice k-1 is multicast (1..1024)",
                   "1"}},
      .rounds = make_nvls,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options& o) { return nvls_cost(n, bytes, pipeline_of(o), p); },
      .size =
          [](int n, const Options& o) {
            const double r = n, slices = pipeline_of(o);
            return ScheduleSize{r * slices, slices + 1, 0, 0, 0};
          },
      .check_options = [](int, const Options& o) { (void)pipeline_of(o); },
      .in_network = true,
      .nvls_kernel = true,
  };
}

}  // namespace ssim::alg
