// Halving-doubling AllReduce with the nearest partner first, the shape ASTRA-sim 2.x calls
// `halvingDoubling`: a recursive-halving ReduceScatter whose partner distance grows 1, 2, 4, ...
// then a recursive-doubling AllGather whose distance shrinks back ..., 4, 2, 1. p = 2^floor(log2 n)
// ranks, p chunks.
//
// ReduceScatter step k (k = 0 .. log2 p - 1): rank r and r XOR 2^k hold the same block of
// p / 2^k chunks; each sends the half its partner keeps (the rank with bit k clear keeps the
// lower half) and reduces the half it receives. After log2 p steps rank r holds one chunk
// complete (chunk bitreverse(r), not chunk r). The AllGather replays the steps in reverse with
// copies. Message sizes per step are rhd's (s/2, s/4, ..., then back), so on a non-blocking
// network the cost is rhd's exactly (rhd_cost); on a ring or torus the nearest-first order puts
// the big early messages on neighbours, where rhd (farthest first) sends them across.
//
// Other n fold the e = n - p extra ranks in first, as rhd does: rank p+k reduces its whole
// buffer into rank k (round "fold") and gets the result back at the end (round "unfold").
#include <bit>
#include <vector>

#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

RoundStream halving_doubling_rounds(int n) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  const int steps = std::countr_zero(static_cast<unsigned>(p));
  Round round;
  if (fold_round(round, n, p)) co_yield round;
  // block[r] = [lo, hi): the chunks rank r is responsible for before the next step.
  std::vector<int> lo(static_cast<std::size_t>(p), 0), hi(static_cast<std::size_t>(p), p);
  std::vector<std::vector<int>> lo_at(static_cast<std::size_t>(steps)), hi_at(lo_at.size());
  round.phase = "reduce-scatter";
  for (int k = 0; k < steps; ++k) {
    lo_at[k] = lo;
    hi_at[k] = hi;
    const int bit = 1 << k;
    round.transfers.clear();
    std::vector<int> next_lo = lo, next_hi = hi;
    for (int r = 0; r < p; ++r) {
      const int mid = (lo[r] + hi[r]) / 2;
      const bool lower = (r & bit) == 0;
      // Send the half the partner keeps.
      if (lower) {
        round.add(r, r ^ bit, mid, hi[r], Op::reduce);
        next_hi[r] = mid;
      } else {
        round.add(r, r ^ bit, lo[r], mid, Op::reduce);
        next_lo[r] = mid;
      }
    }
    lo.swap(next_lo);
    hi.swap(next_hi);
    co_yield round;
  }
  round.phase = "allgather";
  for (int k = steps - 1; k >= 0; --k) {
    const int bit = 1 << k;
    round.transfers.clear();
    // Each rank sends the block it has complete (the half it kept at step k) to its partner.
    for (int r = 0; r < p; ++r) round.add(r, r ^ bit, lo[r], hi[r], Op::copy);
    lo = lo_at[k];
    hi = hi_at[k];
    co_yield round;
  }
  if (unfold_round(round, n, p)) co_yield round;
}

GeneratedRounds make_halving_doubling(int n, const Options&) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  return {Schedule::make(Collective::allreduce, "halving_doubling", n, p),
          halving_doubling_rounds(n), std::nullopt};
}

}  // namespace

AlgorithmInfo halving_doubling_info() {
  return AlgorithmInfo{
      .name = "halving_doubling",
      .description =
          "recursive halving reduce-scatter with the nearest partner first (distance 1, 2, 4, ...), "
          "then recursive doubling allgather (ASTRA-sim's halvingDoubling); extra ranks fold in",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .rounds = make_halving_doubling,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return rhd_cost(n, bytes, p); },
      .size = [](int n, const Options&) { return halving_doubling_size(n); },
  };
}

}  // namespace ssim::alg
