// The rank maps: which physical rank plays each schedule rank (RunOptions::rank_map,
// executor.hpp), so that a schedule built for one straggler, or for several late ranks, runs
// with the ranks a prediction names.
//
//   RunOptions o;  o.rank_map = straggler_rank_map(schedule, /*predicted=*/5);
//   o.rank_map = late_rank_map(schedule, std::vector<int>{5, 2});   // schedule.late: 2 ranks
#pragma once

#include <span>
#include <vector>

#include "algorithms/schedule.hpp"

namespace ssim::sim {

// The permutation that lets `predicted` play the straggler the schedule was built for: swaps
// schedule.straggler and `predicted` (identity when the schedule has no straggler or they are
// equal). A wrong prediction then costs what it costs. Schedules built for a node structure
// (alg::schedule_gpus_per_node = G >= 1, e.g. stragglar_hier) are shifted instead: rank
// node*G + local plays (node + dn) mod N, (local + dl) mod G, which moves the straggler to
// `predicted` and keeps every node and every rail together.
std::vector<int> straggler_rank_map(const alg::Schedule& schedule, int predicted);
// For a schedule built for several late ranks (schedule.late, in expected arrival order): the
// permutation that lets predicted[i] play schedule.late[i] (predicted: distinct ranks, as many
// as schedule.late). Ranks in neither list keep their place; schedule ranks that are predicted
// late but not late in the schedule take the freed ranks in increasing order. With one late
// rank it is straggler_rank_map.
std::vector<int> late_rank_map(const alg::Schedule& schedule, std::span<const int> predicted);

}  // namespace ssim::sim
