// Closed-form costs of the StragglAR schedule (stragglar.hpp has the formulas).
//
// Why they are exact under the executor semantics: every transfer costs tau = alpha + c beta
// (+ gamma c at a reducing receiver) and no rank has two sends or two receives in a round.
// Phase 1 runs the n-1 ring members in lockstep: T_RS = (n-2)(tau + gamma c). In phase 2
// the straggler is in every round: an exchange (tau + gamma c, both ends reduce) in rounds
// 0..n-2, a copy (tau) in every later round. No other rank can be later than the
// straggler: ranks that have not met it yet are at most T_RS + k tau after k rounds, and a
// rank that met it inherits the straggler's time and then grows by tau per round while the
// straggler grows by tau + gamma c. So the end is the straggler's finish:
//   max(arrival_S, T_RS) + (n-1)(tau + gamma c) + (R - n + 1) tau.
#include <algorithm>
#include <limits>

#include "algorithms/stragglar.hpp"

namespace ssim::alg {
namespace {

double chunk_bytes_of(int n, double bytes) { return bytes / (n - 1); }

double phase2_cost(int rounds, int n, double bytes, const CostParams& p) {
  const double c = chunk_bytes_of(n, bytes);
  return rounds * (p.alpha + c * p.beta) + (n - 1) * c * p.gamma;
}

}  // namespace

double stragglar_phase1_cost(int n, double bytes, const CostParams& p) {
  return ring_reduce_scatter_cost(n - 1, bytes, p);
}

double stragglar_ideal_cost_for_rounds(int rounds, int n, double bytes, const CostParams& p) {
  return phase2_cost(rounds, n, bytes, p);
}

double stragglar_worst_cost_for_rounds(int rounds, int n, double bytes, const CostParams& p) {
  return stragglar_phase1_cost(n, bytes, p) + phase2_cost(rounds, n, bytes, p);
}

double stragglar_critical_delay_for_rounds(int rounds, int n, double bytes, const CostParams& p) {
  const double ring = ring_cost(n, bytes, p);
  const double ideal = phase2_cost(rounds, n, bytes, p);
  if (ideal >= ring) return std::numeric_limits<double>::infinity();
  return std::max(0.0, stragglar_phase1_cost(n, bytes, p) + ideal - ring);
}

double stragglar_ideal_cost(int n, double bytes, const CostParams& p) {
  return stragglar_ideal_cost_for_rounds(stragglar_rounds(n), n, bytes, p);
}

double stragglar_worst_cost(int n, double bytes, const CostParams& p) {
  return stragglar_worst_cost_for_rounds(stragglar_rounds(n), n, bytes, p);
}

double stragglar_cost_with_delay(int n, double bytes, const CostParams& p, double delay) {
  return std::max(delay, stragglar_phase1_cost(n, bytes, p)) + stragglar_ideal_cost(n, bytes, p);
}

double stragglar_critical_delay(int n, double bytes, const CostParams& p) {
  return stragglar_critical_delay_for_rounds(stragglar_rounds(n), n, bytes, p);
}

}  // namespace ssim::alg
