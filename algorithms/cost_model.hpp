// Closed-form alpha-beta(-gamma) costs of the schedules this layer generates.
//
// A message of m bytes costs alpha + m * beta; a receiver that reduces m bytes spends
// gamma * m more. Costs are in seconds; they are plain numbers here (this layer knows no
// time types) and describe the schedule as generated, under the executor's semantics
// (DESIGN.md ordering; a rank's sends, and its receives, are served one at a time in the
// order they appear in the round). The simulator is checked against these to 1e-9.
//
//   CostParams p{.alpha = 3e-6, .beta = 1.0 / (450.0 * (1 << 30)), .gamma = 0};
//   double t = find_algorithm("ring").cost(8, 1 << 30, p, Options{});   // all arrive together
//   double r = ring_cost(8, 1 << 30, p);
//
// Byte counts are those of the IR: chunks of floor(bytes / chunks), the last one absorbing
// the remainder; the closed forms are exact when `bytes` divides evenly.
#pragma once

#include <span>

namespace ssim::alg {

struct Schedule;

struct CostParams {
  double alpha = 0.0;  // seconds per message
  double beta = 0.0;   // seconds per byte (1 / bandwidth)
  double gamma = 0.0;  // seconds per byte reduced, at the receiver
  // In-network reductions (algorithms with AlgorithmInfo::in_network): the reducing switch's
  // seconds per reduced byte (1 / its reduction bandwidth; 0: never the bottleneck) and its
  // latency per reduction.
  double switch_beta = 0.0;
  double switch_latency = 0.0;
};

// Paper formulas (StragglAR, arXiv 2505.23523 v2: Table 1 and the alpha-beta model of section
// 4.3, as coded in the paper's reference simulator simulation.py), all ranks present at t = 0.
double ring_cost(int n, double bytes, const CostParams& p);
double rhd_cost(int n, double bytes, const CostParams& p);
// Direct: time after the straggler arrives, with the n-1 AllReduce already done (hidden).
double direct_ideal_cost(int n, double bytes, const CostParams& p);
// Ring ReduceScatter among m ranks over m chunks of bytes / m each.
double ring_reduce_scatter_cost(int m, double bytes, const CostParams& p);

// What the declarations above mean exactly (each is also the exact cost of a schedule we
// generate, gamma included):
//   ring_cost          the ring schedule; equals the paper's Ring row.
//   rhd_cost           our rhd schedule: the paper's pow2 row plus (n-1)/n s gamma; other n
//                      fold the extra ranks in and out: 2 alpha + 2 s beta + s gamma on top of
//                      rhd among 2^floor(log2 n) ranks, s beta more than rhd_paper_cost.
//   direct_ideal_cost  the straggler exchange plus the doubling broadcast of direct:
//                      ceil(log2 n) (alpha + s beta) + s gamma. The paper writes log2 n; its
//                      section 3.3 table uses the fractional log2 n for non-powers of two.

// The paper's RHD row as coded in its simulation.py (Rabenseifner-Traff 3-2 elimination for
// other n): powers of two 2 log2 n alpha + 2(n-1)/n s beta; otherwise
// 2 ceil(log2 n) alpha + 2 s beta (1.5 - 1/2^floor(log2 n)). No gamma term (p.gamma ignored).
double rhd_paper_cost(int n, double bytes, const CostParams& p);
// rhd with nonpow2=rabenseifner (Rabenseifner-Traff pairwise elimination, rhd.cpp): powers of
// two as rhd_cost; otherwise, with p = 2^floor(log2 n),
// 2 ceil(log2 n) alpha + s beta (3 - 2/p) + s gamma (3/2 - 1/p), i.e. rhd_paper_cost plus the
// reductions (the pairs' fold reduces s/2, the halving steps s (1 - 1/p)).
double rhd_rabenseifner_cost(int n, double bytes, const CostParams& p);
// The whole direct schedule: ring AllReduce among n-1 over n-1 chunks, then
// direct_ideal_cost.
double direct_cost(int n, double bytes, const CostParams& p);
// The pipelined binary tree (tree.cpp) with `segments` chunks.
double tree_cost(int n, double bytes, int segments, const CostParams& p);
// straggler_tree (straggler_tree.cpp) with `segments` chunks: the pipelined tree's reduce among
// the n-1 others, the root's full-buffer exchange with the straggler (alpha + s beta + s gamma),
// the tree's broadcast among the n-1. The reduce and broadcast terms are tree_cost's two phases
// at n-1 ranks (none at n-1 = 1).
double straggler_tree_cost(int n, double bytes, int segments, const CostParams& p);
// Its time after the straggler arrives, when the reduce among the others is already done: the
// exchange plus the broadcast among the n-1.
double straggler_tree_ideal_cost(int n, double bytes, int segments, const CostParams& p);
// The double binary tree (dbtree.cpp) with `segments` chunks per tree (2 * segments in all).
double dbtree_cost(int n, double bytes, int segments, const CostParams& p);
// nccl_ring with C `channels` and L `loops` (nccl.cpp) on a non-blocking network, all ranks
// at 0: every round each rank sends one chunk of s/(C L n) per channel, served one after another
// by its send port (alpha-beta), and reduces the last one it received (the others' reductions
// overlap the later receives):
//   T = 2(n-1) L C alpha + 2(n-1)/n s beta + (n-1)/(C n) s gamma.
// The flow model runs a rank's C transfers at once on its link: 2(n-1) L (alpha + s/(L n) beta)
// plus the reductions (tests/sim/nccl_test.cpp).
double nccl_ring_cost(int n, double bytes, int channels, int loops, const CostParams& p);
// direct_rs_ag (all-to-all reduce-scatter + allgather): 2 (n-1) (alpha + s/n beta) + s/n gamma.
double direct_rs_ag_cost(int n, double bytes, const CostParams& p);

// The exact cost of any schedule under these semantics, evaluated round by round (what the
// simulator's alpha-beta dataflow pass computes on a non-blocking network): the last finish
// minus the first arrival. `arrival` per rank (empty: all at 0). For schedules without a
// closed form, e.g. stragglar with several late ranks.
double schedule_cost(const Schedule& s, double bytes, const CostParams& p,
                     std::span<const double> arrival = {});

}  // namespace ssim::alg
