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

Schedule make_rhd(int n, const Options&) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  const int steps = std::countr_zero(static_cast<unsigned>(p));
  Schedule s = Schedule::make(Collective::allreduce, "rhd", n, p);

  append_fold(s, n, p);
  // After reduce-scatter step k (and before allgather step k) rank r holds the block of
  // mask = p >> (k+1) chunks that contains chunk r.
  auto block_begin = [](int r, int mask) { return r / mask * mask; };
  for (int k = 0; k < steps; ++k) {
    const int mask = p >> (k + 1);
    Round& round = s.add_round("reduce-scatter");
    for (int r = 0; r < p; ++r) {
      const int partner = r ^ mask;
      const int send_begin = block_begin(partner, mask);
      round.add(r, partner, send_begin, send_begin + mask, Op::reduce);
    }
  }
  for (int k = steps - 1; k >= 0; --k) {
    const int mask = p >> (k + 1);
    Round& round = s.add_round("allgather");
    for (int r = 0; r < p; ++r) {
      const int own_begin = block_begin(r, mask);
      round.add(r, r ^ mask, own_begin, own_begin + mask, Op::copy);
    }
  }
  append_unfold(s, n, p);
  return s;
}

}  // namespace

ScheduleSize halving_doubling_size(int n) {
  const double r = n, lg = size_log2(n);
  return ScheduleSize{r, 2 * lg + 2, 2 * r * lg + 2 * r};
}

void append_fold(Schedule& s, int n, int chunks) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  if (n == p) return;
  Round& fold = s.add_round("fold");
  for (int k = 0; k < n - p; ++k) fold.add(p + k, k, 0, chunks, Op::reduce);
}

void append_unfold(Schedule& s, int n, int chunks) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  if (n == p) return;
  Round& unfold = s.add_round("unfold");
  for (int k = 0; k < n - p; ++k) unfold.add(k, p + k, 0, chunks, Op::copy);
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
      .generate = make_rhd,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return rhd_cost(n, bytes, p); },
      .size = [](int n, const Options&) { return halving_doubling_size(n); },
  };
}

}  // namespace ssim::alg
