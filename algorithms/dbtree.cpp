// NCCL-style double binary tree AllReduce: two pipelined binary trees run at the same time,
// each reducing and broadcasting half of the buffer in `segments` segments (so 2 * segments
// chunks: tree A owns chunks [0, segments), tree B [segments, 2 * segments)).
//
// Tree A is the heap over ranks (position q = rank q, root 0); tree B is the same heap with
// every rank shifted by h = floor(n/2) (position q holds rank (q + h) mod n, root h). The
// interior positions of a heap are 0..h-1, so A's interior ranks are 0..h-1 and B's are
// h..2h-1: every rank is interior in at most one tree and receives only in that one.
//
// Sends: a rank sends once per step in each tree it is a child in, so its two sends must
// fall in different rounds of the step. A's sides are the heap's (odd positions first);
// B gives every rank the opposite side. Siblings in B are consecutive ranks mod n, hence of
// different parity and opposite sides, except the pair (n-1, 0) that wraps around for odd
// n; rank 0 is A's root and sends only in B, so it simply takes the side opposite its
// B sibling. Each rank thus sends and receives at most once per round, as in `tree`.
#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

// With one segment per tree nothing is pipelined and, for powers of two, the two trees'
// rounds interlock so that the time depends on the tree shape in no simple way (no closed
// form); the unpipelined case is `tree` with segments=1.
constexpr int kDbtreeMinSegments = 2;

GeneratedRounds make_dbtree(int n, const Options& options) {
  const int segments =
      options.get_int("segments", kTreeDefaultSegments, kDbtreeMinSegments, kTreeMaxSegments);
  const int h = n / 2;
  const auto un = static_cast<std::size_t>(n);
  PipelinedTree a{iota_ranks(n), std::vector<int>(un), 0};
  PipelinedTree b{std::vector<int>(un), std::vector<int>(un), segments};
  for (int q = 0; q < n; ++q) a.side[static_cast<std::size_t>(q)] = q % 2 == 1 ? 0 : 1;
  int rank0_position = 0;
  for (int q = 0; q < n; ++q) {
    const int rank = (q + h) % n;
    b.rank_at[static_cast<std::size_t>(q)] = rank;
    b.side[static_cast<std::size_t>(q)] = 1 - a.side[static_cast<std::size_t>(rank)];
    if (rank == 0) rank0_position = q;
  }
  const int sibling = rank0_position % 2 == 1 ? rank0_position + 1 : rank0_position - 1;
  if (sibling < n) {
    b.side[static_cast<std::size_t>(rank0_position)] =
        1 - b.side[static_cast<std::size_t>(sibling)];
  }
  std::vector<PipelinedTree> trees{std::move(a), std::move(b)};
  return {Schedule::make(Collective::allreduce, "dbtree", n, 2 * segments),
          tree_allreduce_rounds(n, 2 * segments, std::move(trees), segments), std::nullopt};
}

}  // namespace

AlgorithmInfo dbtree_info() {
  return AlgorithmInfo{
      .name = "dbtree",
      .description =
          "double binary tree (NCCL-style): two pipelined trees, each reducing and "
          "broadcasting half of the buffer; every rank is interior in at most one",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options =
          {{"segments",
            "segments per tree (each tree pipelines half the buffer; 2 * segments chunks), " +
                std::to_string(kDbtreeMinSegments) + ".." + std::to_string(kTreeMaxSegments),
            std::to_string(kTreeDefaultSegments)}},
      .rounds = make_dbtree,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            return dbtree_cost(
                n, bytes,
                o.get_int("segments", kTreeDefaultSegments, kDbtreeMinSegments, kTreeMaxSegments),
                p);
          },
      // Two trees, each moving its `segments` chunks up and back down every tree edge.
      .size =
          [](int n, const Options& o) {
            const double s =
                o.get_int("segments", kTreeDefaultSegments, kDbtreeMinSegments, kTreeMaxSegments);
            return ScheduleSize{2 * s, 2 * (2 * s + 2 * size_log2(n) + 2), 4 * s * n, 2.0 * n, 4.0 * n};
          },
  };
}

}  // namespace ssim::alg
