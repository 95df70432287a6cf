// MSCCL++'s direct-load AllReduces on a node where every GPU can load from every peer's memory
// (NVLink through NVSwitch): `oneshot` and `twoshot`. A load by rank r of data on rank p is the
// IR transfer {src = p, dst = r}; in both, step i of a round is rank r loading from peer
// (r + i) mod n, i = 1 .. n-1, listed step by step, so every step is a perfect matching and in
// the alpha-beta model no port waits for another.
//
// oneshot: one round, one chunk. Every rank loads every peer's whole buffer and reduces it into
// its own: (n-1) s bytes in and out of every rank's port,
//   T = (n-1) (alpha + s beta) + s gamma
// (each piece is reduced as it lands; only the last reduction is on the critical path). One
// synchronisation instead of two: what wins for small messages.
//
// twoshot: n chunks; round "reduce-scatter": rank r loads chunk r from every peer and reduces it;
// round "allgather": rank r loads every peer p's reduced chunk p. 2 (n-1) s/n bytes per port,
//   T = 2 (n-1) (alpha + (s/n) beta) + (s/n) gamma.
// It moves the same transfers as direct_rs_ag (the all-to-all pair ASTRA-sim calls direct),
// listed in the order the loading rank issues them (r loads r+1 first) where direct_rs_ag lists
// the storing rank's order (r stores to r+1 first): the costs are equal in every model here.
#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

RoundStream oneshot_rounds(int n) {
  Round round{"load-reduce", {}, {}};
  round.transfers.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (int i = 1; i < n; ++i) {
    for (int r = 0; r < n; ++r) round.add((r + i) % n, r, 0, 1, Op::reduce);
  }
  co_yield round;
}

RoundStream twoshot_rounds(int n) {
  Round round{"reduce-scatter", {}, {}};
  round.transfers.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (int i = 1; i < n; ++i) {
    for (int r = 0; r < n; ++r) round.add((r + i) % n, r, r, r + 1, Op::reduce);
  }
  co_yield round;
  round.phase = "allgather";
  round.transfers.clear();
  for (int i = 1; i < n; ++i) {
    for (int r = 0; r < n; ++r) {
      const int from = (r + i) % n;
      round.add(from, r, from, from + 1, Op::copy);
    }
  }
  co_yield round;
}

GeneratedRounds make_oneshot(int n, const Options&) {
  return {Schedule::make(Collective::allreduce, "oneshot", n, 1), oneshot_rounds(n), 1};
}

GeneratedRounds make_twoshot(int n, const Options&) {
  return {Schedule::make(Collective::allreduce, "twoshot", n, n), twoshot_rounds(n), 2};
}

double oneshot_cost(int n, double bytes, const CostParams& p) {
  return (n - 1) * (p.alpha + bytes * p.beta) + bytes * p.gamma;
}

double twoshot_cost(int n, double bytes, const CostParams& p) {
  const double chunk = bytes / n;
  return 2.0 * (n - 1) * (p.alpha + chunk * p.beta) + chunk * p.gamma;
}

}  // namespace

AlgorithmInfo oneshot_info() {
  return AlgorithmInfo{
      .name = "oneshot",
      .description =
          "every rank loads every peer's whole buffer and reduces it, one round "
          "(MSCCL++ one-shot); (n-1)(alpha + s beta) + s gamma",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .rounds = make_oneshot,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return oneshot_cost(n, bytes, p); },
      .size =
          [](int n, const Options&) {
            const double r = n;
            return ScheduleSize{1, 1, r * (r - 1), r * (r - 1), r * (r - 1)};
          },
  };
}

AlgorithmInfo twoshot_info() {
  return AlgorithmInfo{
      .name = "twoshot",
      .description =
          "every rank loads its chunk from all peers and reduces it, then loads the "
          "peers' reduced chunks (MSCCL++ two-shot); 2(n-1)(alpha + s/n beta) + s/n gamma",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {},
      .rounds = make_twoshot,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options&) { return twoshot_cost(n, bytes, p); },
      .size =
          [](int n, const Options&) {
            const double r = n;
            return ScheduleSize{r, 2, 2 * r * (r - 1), r * (r - 1), r * (r - 1)};
          },
  };
}

}  // namespace ssim::alg
