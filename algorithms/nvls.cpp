// NCCL's single-node in-switch AllReduce (NVLS: NVLink SHARP on an NVSwitch), written with the
// IR's in-network reductions (SwitchReduce). The buffer is cut into `pipeline` slices of n
// chunks; chunk p*n + c of slice p is owned by rank c. Per slice, as NCCL's NVLS kernel does it:
//   reduce-scatter  the switch sums chunk c of every rank and returns it to rank c
//                   (multimem.ld_reduce);
//   all-gather      rank c multicasts its reduced chunk to every other rank (multimem.st).
// Round k reduces slice k and multicasts slice k-1, so the two directions of every link work at
// once (NCCL pipelines the same way, chunk by chunk). Two separate steps, not one "reduce and
// deliver to all" op: an NVSwitch returns a ld_reduce's sum to the GPU that issued it only.
//
// Cost in the alpha-beta model (DESIGN.md "In-network reductions": a round's reductions through
// one switch run as one batch, sharing the links and the switch's reduction bandwidth), n ranks
// on one switch, up and down links of 1/beta bytes/s and alpha GPU-to-GPU latency, reduction
// bandwidth 1/beta_r and latency lambda, q = s/P bytes per slice:
//   first round   alpha + lambda + max(q beta, q beta_r)              (up: q, down: q/n)
//   middle rounds alpha + lambda + max(q (1+1/n) beta, q beta_r)      (up: q + q/n, down: q)
//   last round    alpha + q (n-1)/n beta                               (multicast only)
//   T = (P+1) alpha + P lambda + max(q beta, q beta_r) + (P-1) max(q (1+1/n) beta, q beta_r)
//       + q (n-1)/n beta
// (chunk sizes as the IR cuts them; the closed form uses s/(nP) per chunk). For large P it
// tends to s (1+1/n) beta when the links are the bottleneck: every byte crosses a rank's link
// up once and its reduced value comes down once, plus the 1/n the owner multicasts.
#include <algorithm>

#include "algorithms/generators.hpp"

namespace ssim::alg {
namespace {

constexpr int kMaxPipeline = 1024;

RoundStream nvls_rounds(int n, int slices) {
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
  Round round;
  for (int k = 0; k <= slices; ++k) {
    round.switch_reduces.clear();
    round.phase = k == 0        ? "switch-reduce-scatter"
                  : k == slices ? "switch-allgather"
                                : "switch-pipeline";
    if (k < slices) {
      for (int c = 0; c < n; ++c) {
        const int chunk = k * n + c;
        round.switch_reduces.push_back(SwitchReduce{all, {c}, chunk, chunk + 1});
      }
    }
    if (k >= 1) {
      for (int c = 0; c < n; ++c) {
        const int chunk = (k - 1) * n + c;
        std::vector<int> others;
        others.reserve(static_cast<std::size_t>(n - 1));
        for (int r = 0; r < n; ++r)
          if (r != c) others.push_back(r);
        round.switch_reduces.push_back(SwitchReduce{{c}, std::move(others), chunk, chunk + 1});
      }
    }
    co_yield round;
  }
}

int pipeline_of(const Options& o) { return o.get_int("pipeline", 1, 1, kMaxPipeline); }

GeneratedRounds make_nvls(int n, const Options& o) {
  const int slices = pipeline_of(o);
  return {Schedule::make(Collective::allreduce, "nvls", n, n * slices), nvls_rounds(n, slices),
          static_cast<std::size_t>(slices) + 1};
}

}  // namespace

double nvls_cost(int n, double bytes, int slices, const CostParams& p) {
  const double q = bytes / slices;
  const double up_first = q * p.beta, middle = q * (1.0 + 1.0 / n) * p.beta,
               reduce = q * p.switch_beta;
  return (slices + 1) * p.alpha + slices * p.switch_latency + std::max(up_first, reduce) +
         (slices - 1) * std::max(middle, reduce) + q * (n - 1) / n * p.beta;
}

AlgorithmInfo nvls_info() {
  return AlgorithmInfo{
      .name = "nvls",
      .description =
          "in-switch AllReduce (NCCL NVLS): the switch reduces each rank's chunk, the owner "
          "multicasts it; needs a reducing switch; ~2 alpha + s(1+1/n) beta pipelined",
      .supported_ranks = "n >= 2",
      .supports_ranks = [](int n) { return n >= 2; },
      .options = {{"pipeline",
                   "slices the buffer is cut into; round k reduces slice k while "
                   "slice k-1 is multicast (1..1024)",
                   "1"}},
      .rounds = make_nvls,
      .cost = [](int n, double bytes, const CostParams& p,
                 const Options& o) { return nvls_cost(n, bytes, pipeline_of(o), p); },
      .size =
          [](int n, const Options& o) {
            const double r = n, slices = pipeline_of(o);
            return ScheduleSize{r * slices, slices + 1, 0, 0, 0};
          },
      .check_options = [](int, const Options& o) { (void)pipeline_of(o); },
      .in_network = true,
  };
}

}  // namespace ssim::alg
