// Recursive halving-doubling AllReduce (Rabenseifner): a recursive-halving ReduceScatter
// followed by a recursive-doubling AllGather among p = 2^floor(log2 n) ranks, p chunks.
//
// Reduce-scatter step k (k = 0 .. log2 p - 1): rank r exchanges half of its current chunk
// range with r XOR (p >> (k+1)); the rank with that bit clear keeps the lower half. After
// log2 p steps rank r holds chunk r complete. The allgather replays the steps in reverse
// with copies, so powers of two take exactly 2 log2 p rounds.
//
// Other n, option nonpow2 (both take 2 ceil(log2 n) rounds):
//  - fold (default): the e = n - p extra ranks fold in first: rank p+k sends its whole buffer
//    to rank k (reduce, round "fold"), ranks 0..p-1 run the above, and rank k hands the result
//    back to rank p+k (round "unfold"): 2 s beta more traffic on the critical path. The simple
//    MPICH-style elimination; rhd_cost is exact for it, s beta above rhd_paper_cost.
//  - rabenseifner: Rabenseifner and Traff's elimination (EuroPVM/MPI 2004). The first 2e ranks
//    form pairs (2i, 2i+1) that swap halves and reduce (round "fold": 2i ends with the pair's
//    lower half, 2i+1 with its upper half, s/2 each way). The pairs and the other n - 2e ranks
//    are p virtual ranks; in the first halving step a pair sends and receives through the
//    member that holds the half concerned, so the step moves s/2 as for everyone else, and
//    from then on the member that holds the kept half stands for the pair. The last doubling
//    step returns each half to the member that sent it, and the pair swaps halves again
//    (round "unfold", copies). The extra traffic is s/2 + s/2 = s beta: the cost is the
//    paper's RHD row (rhd_paper_cost) plus the reductions, rhd_rabenseifner_cost.
// The default stays fold because shipped experiments (paper_scaling: n = 5, 6, 7, 12, ...)
// report rhd at non-powers of two; `--option nonpow2=rabenseifner` selects the other.
#include <bit>

#include "algorithms/generators.hpp"
#include "common/error.hpp"

namespace ssim::alg {
namespace {

// The butterfly among p virtual ranks. holder(v, chunk) is the physical rank of virtual rank
// v that holds `chunk` while v's range is still the whole buffer (the first halving step and
// the last doubling step); rep(v) is the rank that stands for v in between.
template <typename Holder, typename Rep>
RoundStream butterfly_rounds(int p, Holder holder, Rep rep) {
  const int steps = std::countr_zero(static_cast<unsigned>(p));
  // After reduce-scatter step k (and before allgather step k) virtual rank v holds the block
  // of mask = p >> (k+1) chunks that contains chunk v.
  auto block_begin = [](int v, int mask) { return v / mask * mask; };
  Round round;
  round.phase = "reduce-scatter";
  for (int k = 0; k < steps; ++k) {
    const int mask = p >> (k + 1);
    round.transfers.clear();
    for (int v = 0; v < p; ++v) {
      const int partner = v ^ mask;
      const int send_begin = block_begin(partner, mask);
      const int src = k == 0 ? holder(v, send_begin) : rep(v);
      const int dst = k == 0 ? holder(partner, send_begin) : rep(partner);
      round.add(src, dst, send_begin, send_begin + mask, Op::reduce);
    }
    co_yield round;
  }
  round.phase = "allgather";
  for (int k = steps - 1; k >= 0; --k) {
    const int mask = p >> (k + 1);
    round.transfers.clear();
    for (int v = 0; v < p; ++v) {
      const int own_begin = block_begin(v, mask);
      const int dst = k == 0 ? holder(v ^ mask, own_begin) : rep(v ^ mask);
      round.add(rep(v), dst, own_begin, own_begin + mask, Op::copy);
    }
    co_yield round;
  }
}

RoundStream rhd_rounds(int n) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  Round round;
  if (fold_round(round, n, p)) co_yield round;
  auto same = [](int v, int) { return v; };
  auto rep = [](int v) { return v; };
  RoundStream inner = butterfly_rounds(p, same, rep);
  while (const Round* r = inner.next()) co_yield *r;
  if (unfold_round(round, n, p)) co_yield round;
}

// Rabenseifner-Traff: virtual rank v < e is the pair (2v, 2v+1), 2v holding the lower half of
// the chunks and 2v+1 the upper half after the fold; virtual v >= e is rank v + e.
RoundStream rhd_rabenseifner_rounds(int n) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  const int e = n - p;
  const int half = p / 2;
  Round round;
  if (e > 0) {
    round.phase = "fold";
    round.transfers.clear();
    for (int v = 0; v < e; ++v) {
      round.add(2 * v, 2 * v + 1, half, p, Op::reduce);
      round.add(2 * v + 1, 2 * v, 0, half, Op::reduce);
    }
    co_yield round;
  }
  auto holder = [e, half](int v, int chunk) {
    return v < e ? 2 * v + (chunk >= half ? 1 : 0) : v + e;
  };
  // After the first halving step v keeps the lower half when its top bit is clear.
  auto rep = [e, half](int v) { return v < e ? 2 * v + ((v & half) != 0 ? 1 : 0) : v + e; };
  RoundStream inner = butterfly_rounds(p, holder, rep);
  while (const Round* r = inner.next()) co_yield *r;
  if (e > 0) {
    round.phase = "unfold";
    round.transfers.clear();
    for (int v = 0; v < e; ++v) {
      round.add(2 * v, 2 * v + 1, 0, half, Op::copy);
      round.add(2 * v + 1, 2 * v, half, p, Op::copy);
    }
    co_yield round;
  }
}

bool rabenseifner(const Options& options) {
  const std::string mode = options.get_string("nonpow2", "fold");
  if (mode != "fold" && mode != "rabenseifner") {
    throw InputError("option nonpow2=" + mode + ": expected fold or rabenseifner");
  }
  return mode == "rabenseifner";
}

GeneratedRounds make_rhd(int n, const Options& options) {
  const int p = std::bit_floor(static_cast<unsigned>(n));
  return {Schedule::make(Collective::allreduce, "rhd", n, p),
          rabenseifner(options) ? rhd_rabenseifner_rounds(n) : rhd_rounds(n), std::nullopt};
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
          "2^floor(log2 n) ranks (farthest partner first); other n eliminate the extra ranks "
          "first (nonpow2)",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"nonpow2",
                   "how n that is not a power of two is reduced to 2^floor(log2 n): fold (extra "
                   "rank sends its whole buffer in and gets the result back) or rabenseifner "
                   "(Rabenseifner-Traff: pairs swap halves, s beta less traffic)",
                   "fold"}},
      .rounds = make_rhd,
      .cost =
          [](int n, double bytes, const CostParams& p, const Options& o) {
            return rabenseifner(o) ? rhd_rabenseifner_cost(n, bytes, p) : rhd_cost(n, bytes, p);
          },
      .size = [](int n, const Options&) { return halving_doubling_size(n); },
      .check_options = [](int, const Options& o) { rabenseifner(o); },
  };
}

}  // namespace ssim::alg
