// All-to-all ReduceScatter then all-to-all AllGather, the shape ASTRA-sim 2.x calls `direct`
// (our `direct` is the StragglAR paper's straggler-aware baseline, another algorithm). n chunks;
// chunk j ends reduced on rank j.
//
// Round "reduce-scatter": every rank r sends chunk (r+i) mod n to rank (r+i) mod n, which
// reduces it, for i = 1 .. n-1, listed i by i. Round "allgather": every rank r sends its chunk r
// to rank (r+i) mod n as a copy, same order. Each rank sends n-1 and receives n-1 transfers per
// round; in the alpha-beta model a rank's ports serve them one after the other, and the shifted
// order makes step i a perfect matching (r -> r+i), so no port waits for another:
//   T = 2 (n-1) (alpha + (s/n) beta) + (s/n) gamma
// (the receiver reduces each piece as it lands; only the last reduction is on the critical path).
// Two rounds only: the latency term is (n-1) alpha per round, as in ring, but all of a rank's
// traffic of a phase is in flight in one round, which is what the flow model and a topology
// then share.
#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

RoundStream direct_rs_ag_rounds(int n) {
  Round round{"reduce-scatter", {}, {}};
  round.transfers.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (int i = 1; i < n; ++i) {
    for (int r = 0; r < n; ++r) {
      const int to = (r + i) % n;
      round.add(r, to, to, to + 1, Op::reduce);
    }
  }
  co_yield round;
  round.phase = "allgather";
  round.transfers.clear();
  for (int i = 1; i < n; ++i) {
    for (int r = 0; r < n; ++r) round.add(r, (r + i) % n, r, r + 1, Op::copy);
  }
  co_yield round;
}

GeneratedRounds make_direct_rs_ag(int n, const Options&) {
  return {Schedule::make(Collective::allreduce, "direct_rs_ag", n, n), direct_rs_ag_rounds(n),
          std::nullopt};
}

}  // namespace

double direct_rs_ag_cost(int n, double bytes, const CostParams& p) {
  const double chunk = bytes / n;
  return 2.0 * (n - 1) * (p.alpha + chunk * p.beta) + chunk * p.gamma;
}

AlgorithmInfo direct_rs_ag_info() {
  return AlgorithmInfo{
      .name = "direct_rs_ag",
      .description =
          "all-to-all reduce-scatter then all-to-all allgather, one round each (ASTRA-sim's direct)",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .rounds = make_direct_rs_ag,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return direct_rs_ag_cost(n, bytes, p); },
      .size =
          [](int n, const Options&) {
            const double r = n;
            return ScheduleSize{r, 2, 2 * r * (r - 1), r * (r - 1), r * (r - 1)};
          },
  };
}

}  // namespace ssim::alg
