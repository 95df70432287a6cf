// A tree the straggler joins last: the pipelined binary tree of `tree` over the n-1 ranks that
// are not the straggler, with the straggler attached to the tree's root as a leaf whose
// contribution enters after everything else has been reduced. `segments` chunks.
//  1. "reduce": the pipelined reduce of tree among the n-1 others to their root (rank 0, or
//     rank n-1 when rank 0 is the straggler); it runs while the straggler is still late;
//  2. "straggler-exchange": the straggler and the root swap their full buffers and both
//     reduce (as in direct): both then hold the result;
//  3. "broadcast": the pipelined broadcast of tree from the root among the n-1 others.
// After the straggler arrives it costs the exchange plus the tree's broadcast among n-1
// (straggler_tree_ideal_cost): no ring among n-1 to hide (direct) and no doubling broadcast
// of the full buffer. Built for straggler n-1; another straggler rank is obtained by swapping
// it with n-1, as direct does.
#include <numeric>

#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

RoundStream straggler_tree_rounds(int n, int segments) {
  const int others = n - 1;
  RoundStream up = tree_phase_rounds(others, segments, {heap_tree(iota_ranks(others))}, segments,
                                     /*reduce=*/true);
  while (const Round* r = up.next()) co_yield *r;
  Round round{"straggler-exchange", {}, {}};
  round.add(0, n - 1, 0, segments, Op::reduce);
  round.add(n - 1, 0, 0, segments, Op::reduce);
  co_yield round;
  RoundStream down = tree_phase_rounds(others, segments, {heap_tree(iota_ranks(others))}, segments,
                                       /*reduce=*/false);
  while (const Round* r = down.next()) co_yield *r;
}

int segments_of(const Options& o) {
  return o.get_int("segments", kTreeDefaultSegments, 1, kTreeMaxSegments);
}

GeneratedRounds make_straggler_tree(int n, const Options& options) {
  const int segments = segments_of(options);
  const int straggler = options.get_int("straggler", n - 1, 0, n - 1);
  GeneratedRounds g{Schedule::make(Collective::allreduce, "straggler_tree", n, segments),
                    straggler_tree_rounds(n, segments), std::nullopt};
  g.header.straggler = straggler;
  g.stream = with_straggler_at(std::move(g.stream), n, straggler);
  return g;
}

}  // namespace

AlgorithmInfo straggler_tree_info() {
  return AlgorithmInfo{
      .name = "straggler_tree",
      .description =
          "pipelined binary tree among the n-1 non-stragglers; the straggler joins last as a "
          "leaf of the root (full-buffer exchange), then the tree broadcasts",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"straggler", "rank the schedule treats as the straggler, 0..n-1", "n-1"},
                  {"segments",
                   "number of chunks the tree among the others is pipelined in, 1.." +
                       std::to_string(kTreeMaxSegments),
                   std::to_string(kTreeDefaultSegments)}},
      .rounds = make_straggler_tree,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options& o) { return straggler_tree_cost(n, bytes, segments_of(o), p); },
      // tree's bound at n-1 ranks plus the exchange: each of the n-2 non-root others sends
      // each segment up once and receives it back once.
      .size =
          [](int n, const Options& o) {
            const double s = segments_of(o);
            return ScheduleSize{s, 4 * (s + 2 * size_log2(n) + 2) + 1, 2 * s * (n - 2) + 2, 1.0 * n,
                                2.0 * n + 2};
          },
      .straggler_aware = true,
  };
}

}  // namespace ssim::alg
