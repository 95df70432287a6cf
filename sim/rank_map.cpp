#include "sim/rank_map.hpp"

#include <string>
#include <utility>

#include "common/error.hpp"

namespace ssim::sim {

std::vector<int> straggler_rank_map(const alg::Schedule& schedule, int predicted) {
  SSIM_CHECK(predicted >= 0 && predicted < schedule.ranks, "predicted straggler out of range");
  std::vector<int> perm(static_cast<std::size_t>(schedule.ranks));
  for (int r = 0; r < schedule.ranks; ++r) perm[r] = r;
  if (!schedule.straggler) return perm;
  // A schedule built for a node structure (its gpus_per_node option, rank = node*G + local):
  // shift nodes and local indices alike so that nodes and rails stay whole.
  const int g = alg::schedule_gpus_per_node(schedule);
  if (g >= 1 && schedule.ranks % g == 0) {
    const int nodes = schedule.ranks / g, s = *schedule.straggler;
    const int dn = (predicted / g - s / g + nodes) % nodes, dl = (predicted % g - s % g + g) % g;
    for (int r = 0; r < schedule.ranks; ++r) perm[r] = (r / g + dn) % nodes * g + (r % g + dl) % g;
    return perm;
  }
  std::swap(perm[*schedule.straggler], perm[predicted]);
  return perm;
}

std::vector<int> late_rank_map(const alg::Schedule& schedule, std::span<const int> predicted) {
  const std::size_t n = static_cast<std::size_t>(schedule.ranks);
  SSIM_CHECK(predicted.size() == schedule.late.size(), "one prediction per late rank");
  std::vector<int> perm(n, -1);
  std::vector<char> used(n, 0), is_late(n, 0);
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    const int p = predicted[i];
    SSIM_CHECK(p >= 0 && p < schedule.ranks && !used[static_cast<std::size_t>(p)],
               "predicted late ranks must be distinct and in range");
    perm[static_cast<std::size_t>(schedule.late[i])] = p;
    used[static_cast<std::size_t>(p)] = 1;
    is_late[static_cast<std::size_t>(schedule.late[i])] = 1;
  }
  for (std::size_t r = 0; r < n; ++r) {  // ranks of neither list stay
    if (!is_late[r] && !used[r]) {
      perm[r] = static_cast<int>(r);
      used[r] = 1;
    }
  }
  std::size_t next = 0;  // the rest take the freed ranks in order
  for (std::size_t r = 0; r < n; ++r) {
    if (perm[r] >= 0) continue;
    while (used[next]) ++next;
    perm[r] = static_cast<int>(next);
    used[next] = 1;
  }
  return perm;
}

}  // namespace ssim::sim
