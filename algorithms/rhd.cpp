// Recursive halving-doubling AllReduce (Rabenseifner): a recursive-halving ReduceScatter
// followed by a recursive-doubling AllGather among p = 2^floor(log2 n) ranks, p chunks.
//
// Reduce-scatter step k (k = 0 .. log2 p - 1): rank r exchanges half of its current chunk
// range with r XOR (p >> (k+1)); the rank with that bit clear keeps the lower half. After
// log2 p steps rank r holds chunk r complete. The allgather replays the steps in reverse
// with copies, so powers of two take exactly 2 log2 p rounds.
//
// Other n fold the e = n - p extra ranks in first: rank p+k sends its whole buffer to rank k
// (reduce, round "fold"), ranks 0..p-1 run the above, and rank k hands the result back to
// rank p+k (round "unfold"): 2 ceil(log2 n) rounds and 2 s beta more traffic on the critical
// path. This is the simple MPICH-style elimination, not Rabenseifner-Traff's 3-2 elimination
// that the StragglAR paper's formula models, so `.cost` (rhd_cost, exact for this schedule)
// exceeds rhd_paper_cost by s beta for non-powers of two (cost_model.hpp).
#include <bit>

#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

RoundStream rhd_rounds(int n) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  const int steps = std::countr_zero(static_cast<unsigned>(p));
  Round round;
  if (fold_round(round, n, p)) co_yield round;
  // After reduce-scatter step k (and before allgather step k) rank r holds the block of
  // mask = p >> (k+1) chunks that contains chunk r.
  auto block_begin = [](int r, int mask) { return r / mask * mask; };
  round.phase = "reduce-scatter";
  for (int k = 0; k < steps; ++k) {
    const int mask = p >> (k + 1);
    round.transfers.clear();
    for (int r = 0; r < p; ++r) {
      const int partner = r ^ mask;
      const int send_begin = block_begin(partner, mask);
      round.add(r, partner, send_begin, send_begin + mask, Op::reduce);
    }
    co_yield round;
  }
  round.phase = "allgather";
  for (int k = steps - 1; k >= 0; --k) {
    const int mask = p >> (k + 1);
    round.transfers.clear();
    for (int r = 0; r < p; ++r) {
      const int own_begin = block_begin(r, mask);
      round.add(r, r ^ mask, own_begin, own_begin + mask, Op::copy);
    }
    co_yield round;
  }
  if (unfold_round(round, n, p)) co_yield round;
}

GeneratedRounds make_rhd(int n, const Options&) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  return {Schedule::make(Collective::allreduce, "rhd", n, p), rhd_rounds(n), std::nullopt};
}

}  // namespace

ScheduleSize halving_doubling_size(int n) {
  const double r = n, lg = size_log2(n);
  return ScheduleSize{r, 2 * lg + 2, 2 * r * lg + 2 * r, r, r * lg + 2 * r};
}

bool fold_round(Round& round, int n, int chunks) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  if (n == p) return false;
  round.phase = "fold";
  round.transfers.clear();
  for (int k = 0; k < n - p; ++k) round.add(p + k, k, 0, chunks, Op::reduce);
  return true;
}

bool unfold_round(Round& round, int n, int chunks) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  if (n == p) return false;
  round.phase = "unfold";
  round.transfers.clear();
  for (int k = 0; k < n - p; ++k) round.add(k, p + k, 0, chunks, Op::copy);
  return true;
}

void append_fold(Schedule& s, int n, int chunks) {
  Round round;
  if (fold_round(round, n, chunks)) s.rounds.push_back(std::move(round));
}

void append_unfold(Schedule& s, int n, int chunks) {
  Round round;
  if (unfold_round(round, n, chunks)) s.rounds.push_back(std::move(round));
}

AlgorithmInfo rhd_info() {
  return AlgorithmInfo{
      .name = "rhd",
      .description =
          "recursive halving reduce-scatter then recursive doubling allgather among "
          "2^floor(log2 n) ranks; extra ranks fold in first and get the result last",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .rounds = make_rhd,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return rhd_cost(n, bytes, p); },
      .size = [](int n, const Options&) { return halving_doubling_size(n); },
  };
}

}  // namespace ssim::alg
