#include "algorithms/round_stream.hpp"

#include <numeric>
#include <utility>

#include "common/error.hpp"

namespace ssim::alg {

RoundStream relabeled(RoundStream inner, std::vector<int> perm) {
  std::vector<char> seen(perm.size(), 0);
  for (int p : perm) {
    SSIM_CHECK(p >= 0 && p < static_cast<int>(perm.size()) && !seen[p],
               "relabel needs a permutation");
    seen[p] = 1;
  }
  Round out;
  while (const Round* r = inner.next()) {
    out.phase = r->phase;
    out.transfers.assign(r->transfers.begin(), r->transfers.end());
    for (Transfer& t : out.transfers) {
      SSIM_CHECK(t.src >= 0 && t.src < static_cast<int>(perm.size()) && t.dst >= 0 &&
                     t.dst < static_cast<int>(perm.size()),
                 "relabel: rank outside the permutation");
      t.src = perm[t.src];
      t.dst = perm[t.dst];
    }
    co_yield out;
  }
}

RoundStream with_straggler_at(RoundStream inner, int n, int straggler) {
  if (straggler == n - 1) return inner;
  std::vector<int> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(straggler)], perm[static_cast<std::size_t>(n - 1)]);
  return relabeled(std::move(inner), std::move(perm));
}

void append_rounds(Schedule& s, RoundStream stream) {
  while (const Round* r = stream.next()) s.rounds.push_back(*r);
}

}  // namespace ssim::alg
