// Pipelined binary-tree AllReduce: the buffer is cut into `segments` chunks that flow up a
// heap-shaped binary tree (rank q's parent is (q-1)/2, root 0) with reductions, then back
// down with copies.
//
// Every step has two rounds: odd positions (left children) talk to their parent in the first,
// even positions (right children) in the second. So a parent receives from its two children
// in different rounds and each rank sends at most one and receives at most one transfer per
// round, which makes the timing lock-step (see tree_cost in cost_model.cpp). The reduce phase
// ends before the broadcast starts: the broadcast is not overlapped with the reduce of
// later segments. Also the building block of dbtree (append_tree_allreduce).
#include <bit>

#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

int depth_of(int position) { return std::bit_width(static_cast<unsigned>(position) + 1) - 1; }

GeneratedRounds make_tree(int n, const Options& options) {
  const int segments = options.get_int("segments", kTreeDefaultSegments, 1, kTreeMaxSegments);
  std::vector<PipelinedTree> trees{heap_tree(iota_ranks(n))};
  return {Schedule::make(Collective::allreduce, "tree", n, segments),
          tree_allreduce_rounds(n, segments, std::move(trees), segments), std::nullopt};
}

}  // namespace

PipelinedTree heap_tree(std::vector<int> ranks) {
  const std::size_t n = ranks.size();
  PipelinedTree tree{std::move(ranks), std::vector<int>(n), 0};
  for (std::size_t q = 0; q < n; ++q) tree.side[q] = q % 2 == 1 ? 0 : 1;
  return tree;
}

RoundStream tree_phase_rounds(int n, int chunks, std::vector<PipelinedTree> trees, int segments,
                              bool reduce) {
  for (const PipelinedTree& t : trees) {
    SSIM_CHECK(static_cast<int>(t.rank_at.size()) == n && static_cast<int>(t.side.size()) == n,
               "pipelined tree must place every rank");
    SSIM_CHECK(t.first_chunk >= 0 && t.first_chunk + segments <= chunks,
               "tree segments outside the chunks");
  }
  const int deepest = depth_of(n - 1);
  const int steps = segments + deepest - 1;
  // In the reduce, a position at depth d moves segment step - (deepest - d) up to its parent;
  // in the broadcast it receives segment step - (d - 1) from it (out of range: idle).
  Round round;
  round.phase = reduce ? "reduce" : "broadcast";
  for (int step = 0; step < steps; ++step) {
    for (int side = 0; side < 2; ++side) {
      round.transfers.clear();
      for (const PipelinedTree& t : trees) {
        for (int q = 1; q < n; ++q) {
          if (t.side[static_cast<std::size_t>(q)] != side) continue;
          const int depth = depth_of(q);
          const int j = reduce ? step - (deepest - depth) : step - (depth - 1);
          if (j < 0 || j >= segments) continue;
          const int child = t.rank_at[static_cast<std::size_t>(q)];
          const int parent = t.rank_at[static_cast<std::size_t>((q - 1) / 2)];
          const int chunk = t.first_chunk + j;
          if (reduce) {
            round.add(child, parent, chunk, chunk + 1, Op::reduce);
          } else {
            round.add(parent, child, chunk, chunk + 1, Op::copy);
          }
        }
      }
      if (!round.transfers.empty()) co_yield round;
    }
  }
}

RoundStream tree_allreduce_rounds(int n, int chunks, std::vector<PipelinedTree> trees,
                                  int segments) {
  RoundStream up = tree_phase_rounds(n, chunks, trees, segments, true);
  while (const Round* r = up.next()) co_yield *r;
  RoundStream down = tree_phase_rounds(n, chunks, std::move(trees), segments, false);
  while (const Round* r = down.next()) co_yield *r;
}

AlgorithmInfo tree_info() {
  return AlgorithmInfo{
      .name = "tree",
      .description = "pipelined binary-tree reduce to rank 0 then broadcast, in `segments` chunks",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"segments",
                   "number of chunks the buffer is pipelined in, 1.." +
                       std::to_string(kTreeMaxSegments) +
                       " (time is lowest near sqrt((floor(log2 n) - 1) s beta / alpha))",
                   std::to_string(kTreeDefaultSegments)}},
      .rounds = make_tree,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            return tree_cost(n, bytes,
                             o.get_int("segments", kTreeDefaultSegments, 1, kTreeMaxSegments), p);
          },
      // Every non-root rank sends each segment up once and receives it back once.
      .size =
          [](int n, const Options& o) {
            const double s = o.get_int("segments", kTreeDefaultSegments, 1, kTreeMaxSegments);
            return ScheduleSize{s, 4 * (s + 2 * size_log2(n) + 2), 2 * s * n, 1.0 * n, 2.0 * n};
          },
  };
}

}  // namespace ssim::alg
