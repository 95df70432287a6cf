// Declarations of the algorithm generators (one file each) and the building blocks they share.
// Users go through registry.hpp; this header is for the algorithm files and their tests.
#pragma once

#include <span>
#include <string_view>

#include "algorithms/registry.hpp"
#include "algorithms/schedule.hpp"

namespace ssim::alg {

AlgorithmInfo ring_info();       // ring.cpp
AlgorithmInfo rhd_info();        // rhd.cpp
AlgorithmInfo direct_info();     // direct.cpp
AlgorithmInfo tree_info();       // tree.cpp
AlgorithmInfo dbtree_info();     // dbtree.cpp
AlgorithmInfo stragglar_info();  // stragglar.cpp

// Ring ReduceScatter among `members` (any subset of ranks, in ring order) over chunks
// [first_chunk, first_chunk + members.size()): appends members.size() - 1 rounds labelled
// `phase`; afterwards members[i] holds chunk first_chunk + i reduced over all members.
void append_ring_reduce_scatter(Schedule& s, std::span<const int> members, int first_chunk,
                                std::string_view phase = "reduce-scatter");
// Ring AllGather that undoes the above: starts with chunk first_chunk + i complete on
// members[i]; appends members.size() - 1 rounds of copies.
void append_ring_allgather(Schedule& s, std::span<const int> members, int first_chunk,
                           std::string_view phase = "allgather");

// Ranks 0..n-1 in order, for the common case of a ring over everyone.
std::vector<int> iota_ranks(int n);

}  // namespace ssim::alg
