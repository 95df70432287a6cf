// Declarations of the algorithm generators (one file each) and the building blocks they share.
// Users go through registry.hpp; this header is for the algorithm files and their tests.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/registry.hpp"
#include "algorithms/round_stream.hpp"
#include "algorithms/schedule.hpp"

namespace ssim::alg {

AlgorithmInfo ring_info();              // ring.cpp
AlgorithmInfo rhd_info();               // rhd.cpp
AlgorithmInfo direct_info();            // direct.cpp
AlgorithmInfo tree_info();              // tree.cpp
AlgorithmInfo dbtree_info();            // dbtree.cpp
AlgorithmInfo stragglar_info();         // stragglar.cpp
AlgorithmInfo halving_doubling_info();  // halving_doubling.cpp
AlgorithmInfo direct_rs_ag_info();      // direct_rs_ag.cpp
AlgorithmInfo oneshot_info();           // direct_load.cpp
AlgorithmInfo twoshot_info();           // direct_load.cpp
AlgorithmInfo nvls_info();              // nvls.cpp
// nvls's closed form with `slices` pipeline slices (nvls.cpp).
double nvls_cost(int n, double bytes, int slices, const CostParams& p);
AlgorithmInfo nvls_tree_info();  // nvls.cpp
AlgorithmInfo collnet_info();    // hierarchical.cpp
// collnet's closed form, G = g GPUs per node, all arriving together: intra = the node's ring
// (alpha, beta, gamma), inter = a rail's reducing switch (alpha: NIC up + down latency, beta per
// NIC link, switch_beta, switch_latency):
//   T = ring_reduce_scatter(G, s) + alpha_f + lambda + max(s/G beta_f, s/G beta_r)
//       + (G-1)(alpha + s/G beta)
double collnet_cost(int n, double bytes, int g, const CostParams& intra, const CostParams& inter);
AlgorithmInfo collnet_direct_info();  // collnet.cpp
AlgorithmInfo collnet_chain_info();   // collnet.cpp
// collnet_direct's closed form with one slice, G = g GPUs per node, all arriving together:
// intra = the node's NVLink (alpha GPU to GPU, beta per link, gamma), inter = a rail's reducing
// switch (alpha: NIC up + down latency, beta per NIC link, switch_beta, switch_latency). The
// scatter and the gather each cost (G-1)(alpha + s/G beta) in the alpha-beta model (a GPU's
// sends one after another) and alpha + (G-1) s/G beta in the flow model (`flow`: at once):
//   T = 2 phase + s/G gamma + alpha_f + lambda + max(s/G beta_f, s/G beta_r)   (G = 1: the
//   switch alone).
double collnet_direct_cost(int n, double bytes, int g, const CostParams& intra,
                           const CostParams& inter, bool flow = false);
// collnet_chain's closed form with one segment and C `channels`, C <= G or a multiple of G
// (InputError otherwise), m = ceil(C/G) channels per rail: every GPU sends m transfers of s/C
// per step, one after another in the alpha-beta model (m alpha) and at once in the flow model
// (`flow`: one alpha):
//   T = (G-1)(2 m alpha + 2 m s/C beta + s/C gamma) + alpha_f + lambda
//       + max(m s/C beta_f, m s/C beta_r)
double collnet_chain_cost(int n, double bytes, int g, int channels, const CostParams& intra,
                          const CostParams& inter, bool flow = false);
// nvls_tree's closed form, G = g GPUs per node, N = n/g nodes, all arriving together: intra =
// the node's NVSwitch (alpha GPU-to-GPU, beta per link, switch_beta, switch_latency), inter =
// a rail's route between nodes (alpha, beta, gamma of the inter algorithm's reductions):
//   T = 2 alpha + lambda + max(s beta, s beta_r) + (G-1)/G s beta + T_inter(N, s/G)
// with T_inter the inter algorithm's closed form (ring by default; dbtree is NCCL's NVLS_TREE).
double nvls_tree_cost(int n, double bytes, int g, const CostParams& intra, const CostParams& inter,
                      const std::string& inter_algorithm = "ring");
AlgorithmInfo straggler_tree_info();  // straggler_tree.cpp
AlgorithmInfo hierarchical_info();    // hierarchical.cpp
AlgorithmInfo stragglar_hier_info();  // stragglar_hier.cpp
AlgorithmInfo nccl_ring_info();       // nccl.cpp
AlgorithmInfo nccl_tree_info();       // nccl.cpp
AlgorithmInfo nccl_info();            // nccl.cpp
// NCCL's binary tree over `nodes` indices rooted at 0 (the rule of ncclGetBtree, NVIDIA/nccl
// src/graph/trees.cc): the parent of every index, -1 at the root. nccl_dtree_parents(nodes, 1)
// is the second tree of the double binary tree (mirrored for an even count, shifted by one for
// an odd count); (nodes, 0) is the first.
std::vector<int> nccl_btree_parents(int nodes);
std::vector<int> nccl_dtree_parents(int nodes, int which);

// The same two as round generators (round_stream.hpp).
RoundStream ring_reduce_scatter_rounds(std::vector<int> members, int first_chunk,
                                       std::string phase);
RoundStream ring_allgather_rounds(std::vector<int> members, int first_chunk, std::string phase);

// Ring ReduceScatter among `members` (any subset of ranks, in ring order) over chunks
// [first_chunk, first_chunk + members.size()): appends members.size() - 1 rounds labelled
// `phase`; afterwards members[i] holds chunk first_chunk + i reduced over all members.
void append_ring_reduce_scatter(Schedule& s, std::span<const int> members, int first_chunk,
                                std::string_view phase = "reduce-scatter");
// Ring AllGather that undoes the above: starts with chunk first_chunk + i complete on
// members[i]; appends members.size() - 1 rounds of copies.
void append_ring_allgather(Schedule& s, std::span<const int> members, int first_chunk,
                           std::string_view phase = "allgather");

// The non-power-of-two wrapper of rhd and halving_doubling: with p = 2^floor(log2 n) and
// e = n - p extra ranks, append_fold adds round "fold" (rank p+k reduces its whole buffer of
// `chunks` chunks into rank k) and append_unfold round "unfold" (rank k copies the result back
// to rank p+k); both add nothing when n is a power of two.
// fold_round/unfold_round fill `round` with that round and return false (round untouched) for
// powers of two.
void append_fold(Schedule& s, int n, int chunks);
void append_unfold(Schedule& s, int n, int chunks);
bool fold_round(Round& round, int n, int chunks);
bool unfold_round(Round& round, int n, int chunks);
// The size bound of both (registry.hpp's ScheduleSize): p chunks, 2 ceil(log2 n) rounds.
ScheduleSize halving_doubling_size(int n);

// Node structure (hierarchical.cpp): ranks are nodes x G, rank = node * G + local.
// The `gpus_per_node` option, checked: in [lo, n] and dividing n (InputError naming
// `algorithm` otherwise); n (one node) when absent.
int checked_gpus_per_node(const std::string& algorithm, int n, const Options& options, int lo);
// The `inter` option (the AllReduce across nodes per rail), checked: one of `valid` (InputError
// naming `algorithm` and listing them otherwise); "ring" when absent.
std::string checked_inter(const std::string& algorithm, const Options& options,
                          std::initializer_list<const char*> valid);
// The ranks of node `node` (locals 0..g-1) and of rail `local` (one per node, node order).
std::vector<int> node_members(int node, int g);
std::vector<int> rail_members(int local, int g, int nodes);
// Appends `in`'s transfers to `out` with rank i renamed members[i] and chunk c widened to
// chunks [base + c*width, base + (c+1)*width).
void append_mapped(Round& out, const Round& in, const std::vector<int>& members, int base,
                   int width);

// Ranks 0..n-1 in order, for the common case of a ring over everyone.
std::vector<int> iota_ranks(int n);

// The `segments` option of tree and dbtree: default and upper bound.
inline constexpr int kTreeDefaultSegments = 16;
inline constexpr int kTreeMaxSegments = 65536;

// A binary tree in heap layout over all ranks: position q has parent (q-1)/2; rank_at[q] is
// the rank at position q and side[q] (0 or 1) the round of each two-round step in which
// position q exchanges with its parent (siblings must differ). Segment j of the pipeline is
// chunk first_chunk + j.
struct PipelinedTree {
  std::vector<int> rank_at;
  std::vector<int> side;
  int first_chunk = 0;
};
// Pipelined reduce to the root then broadcast from it, all `trees` at once (tree.cpp): in
// step t a position at depth d sends segment t - (D - d) up (D = depth of the deepest
// position), then in the broadcast receives segment t - (d - 1) from its parent, each in
// the round of its side. Empty rounds are left out. `chunks`: the schedule's chunk count.
RoundStream tree_allreduce_rounds(int n, int chunks, std::vector<PipelinedTree> trees,
                                  int segments);
// One phase of the above: the reduce (`reduce` true) or the broadcast rounds alone.
RoundStream tree_phase_rounds(int n, int chunks, std::vector<PipelinedTree> trees, int segments,
                              bool reduce);
// A heap-layout binary tree over `ranks` (position q holds ranks[q]; odd positions in the
// first round of a step), as tree uses it.
PipelinedTree heap_tree(std::vector<int> ranks);

}  // namespace ssim::alg
