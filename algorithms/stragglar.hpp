// StragglAR (arXiv 2505.23523): AllReduce that hides half its work behind a straggler.
// The generator is registered as "stragglar" (registry.hpp); this header adds what tests,
// benchmarks and the cost model need beyond the registry: the phase-2 rounds on their own,
// the phase-2 round count, and the closed-form costs.
//
//   Schedule s = generate("stragglar", 12, Options{});       // ring RS among 0..10, then phase 2
//   Schedule p2 = stragglar_phase2(12);                       // phase 2 only, straggler 11
//   int r = stragglar_rounds(12);                             // == p2.rounds.size()
//   double t = stragglar_cost_with_delay(12, 1 << 30, params, 2e-3);
//
// Model (stragglar.cpp explains the construction): n ranks, straggler n-1, n-1 chunks of
// s/(n-1) bytes. Phase 1: ring ReduceScatter among the n-1 others (n-2 rounds). Phase 2:
// in round r <= n-2 rank r and the straggler swap chunk r and both reduce; every other
// transfer copies a fully reduced chunk; every rank sends at most one and receives at most
// one chunk per round.
#pragma once

#include "algorithms/cost_model.hpp"
#include "algorithms/schedule.hpp"

namespace ssim::alg {

// Phase 2 alone for straggler n-1 (n >= 3): the rounds that run once the straggler has
// arrived, assuming phase 1 has left non-straggler g with chunk g summed over ranks
// 0..n-2. Not an AllReduce by itself (the verifier starts from raw data), hence no
// registry option for it.
//
// With late > 1 (the k-straggler generalization, `stragglers=k`): n-k chunk owners 0..n-k-1,
// passive late ranks n-k..n-2 (already folded in, they need every chunk) and the straggler
// n-1; n-k chunks.
Schedule stragglar_phase2(int n, int late = 1);

// Phase-2 round count of the generator (equal to stragglar_phase2(n).rounds.size()): the
// lower bound below for every n in 3..4096 (README.md has the table; n = 33 through a
// searched template, stragglar_tables.hpp; n = 1025 and 2049 through stragglar_timeline.hpp). n-2+log2(n) for powers of two, otherwise computed once per n and cached.
int stragglar_rounds(int n);
// The same for k = `late` late ranks (the rounds after the last one arrives, when the others
// are folded in): n-k-1+ceil(log2 n) is the lower bound (README.md: proof sketch and table).
int stragglar_rounds(int n, int late);
int stragglar_round_lower_bound(int n, int late);
// n-2+ceil(log2 n): the straggler releases one chunk per round (last one in round n-2) and
// the holders of the last chunk at most double per round afterwards.
int stragglar_round_lower_bound(int n);

// Costs in seconds under cost_model.hpp's semantics (alpha + m*beta per message, gamma*m
// per reduced byte at the receiver), for `bytes` divisible by n-1. With c = bytes/(n-1),
// tau = alpha + c*beta and R phase-2 rounds:
//   phase 1  T_RS = (n-2) (tau + gamma c)
//   phase 2  T_2  = R tau + (n-1) gamma c     (the straggler reduces in each of its n-1 exchanges)
double stragglar_phase1_cost(int n, double bytes, const CostParams& p);
// Time after the straggler arrives when phase 1 is already done (hidden): T_2.
double stragglar_ideal_cost(int n, double bytes, const CostParams& p);
// Everyone arrives at t = 0 (phase 1 exposed): T_RS + T_2. This is the registry's `.cost`.
double stragglar_worst_cost(int n, double bytes, const CostParams& p);
// Non-stragglers arrive at 0, the straggler at `delay` >= 0; time from the first arrival to
// the end: max(delay, T_RS) + T_2.
double stragglar_cost_with_delay(int n, double bytes, const CostParams& p, double delay);
// The delay d at which StragglAR ties Ring that waits for the straggler (d + ring_cost):
// T_RS + T_2 - ring_cost. 0 when StragglAR wins at any delay; +infinity when T_2 alone is
// not below ring_cost (StragglAR never wins).
double stragglar_critical_delay(int n, double bytes, const CostParams& p);

// The same formulas for a given phase-2 round count (e.g. the paper's counts for other n).
double stragglar_ideal_cost_for_rounds(int rounds, int n, double bytes, const CostParams& p);
double stragglar_worst_cost_for_rounds(int rounds, int n, double bytes, const CostParams& p);
double stragglar_critical_delay_for_rounds(int rounds, int n, double bytes, const CostParams& p);

}  // namespace ssim::alg
