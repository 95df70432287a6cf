// Direct: the StragglAR paper's straggler-aware baseline ("Broadcast" in its code). n-1 chunks.
//  1. ring AllReduce among the n-1 non-stragglers (reduce-scatter + allgather, 2(n-2) rounds;
//     it can run while the straggler is still computing);
//  2. "straggler-exchange": the straggler and rank 0 swap their full buffers and both reduce;
//  3. "broadcast": the holders of the result double every round (2, 4, 8, ...), each sending
//     the full buffer to one rank that lacks it: ceil(log2 n) - 1 rounds.
// Built for straggler n-1; another straggler rank is obtained by swapping it with n-1.
#include <numeric>

#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

RoundStream direct_rounds(int n) {
  const int last = n - 1;
  RoundStream rs = ring_reduce_scatter_rounds(iota_ranks(n - 1), 0, "reduce-scatter");
  while (const Round* r = rs.next()) co_yield *r;
  RoundStream ag = ring_allgather_rounds(iota_ranks(n - 1), 0, "allgather");
  while (const Round* r = ag.next()) co_yield *r;

  Round round{"straggler-exchange", {}, {}};
  round.add(0, last, 0, n - 1, Op::reduce);
  round.add(last, 0, 0, n - 1, Op::reduce);
  co_yield round;

  round.phase = "broadcast";
  std::vector<int> holders = {0, last};
  int next = 1;  // ranks 1 .. n-2 still lack the result, in this order
  while (next < last) {
    round.transfers.clear();
    const std::size_t senders = holders.size();
    for (std::size_t h = 0; h < senders && next < last; ++h, ++next) {
      round.add(holders[h], next, 0, n - 1, Op::copy);
      holders.push_back(next);
    }
    co_yield round;
  }
}

GeneratedRounds make_direct(int n, const Options& options) {
  const int straggler = options.get_int("straggler", n - 1, 0, n - 1);
  GeneratedRounds g{Schedule::make(Collective::allreduce, "direct", n, n - 1), direct_rounds(n),
                    std::nullopt};
  g.header.straggler = straggler;
  g.stream = with_straggler_at(std::move(g.stream), n, straggler);
  return g;
}

}  // namespace

AlgorithmInfo direct_info() {
  return AlgorithmInfo{
      .name = "direct",
      .description =
          "ring allreduce among the n-1 non-stragglers, full-buffer exchange with the "
          "straggler, doubling broadcast of the full buffer (StragglAR paper baseline)",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"straggler", "rank the schedule treats as the straggler, 0..n-1", "n-1"}},
      .rounds = make_direct,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return direct_cost(n, bytes, p); },
      .size =
          [](int n, const Options&) {
            const double r = n, lg = size_log2(n);
            return ScheduleSize{r, 2 * r + lg + 2, 2 * r * r + r * (lg + 2), r, 3 * r};
          },
      .straggler_aware = true,
  };
}

}  // namespace ssim::alg
