// Fitting a delay model (sim/delays.hpp) to measured per-rank step times: which ranks straggle,
// how often they sit on their home rank, their extra delay and every rank's base delay, each
// distribution chosen among candidates by the Kolmogorov-Smirnov distance.
//
//   std::vector<std::vector<double>> t = ...;   // t[step][rank], seconds, finite, >= 0
//   DelayFit f = fit_delays(t);                 // f.model, f.base, f.stragglers, f.report()
//
// Method (each step s, ranks r):
//   - offsets x[s][r] = t[s][r] - min_r t[s][r]: what the step's compute shares is removed,
//     leaving each rank's lateness (the simulator's arrival offsets);
//   - straggler home ranks: a rank that is the slowest of a step far more often than chance,
//     count_r > S/R + 4 sqrt(S (1/R)(1 - 1/R)) (binomial, 4 standard deviations), needs R >= 3;
//     its persistence is count_r / S (the model's definition: the fraction of steps in which the
//     straggler sat on its home rank and was the last);
//   - the k stragglers' extra delay (k = the home ranks found): per step, the k largest offsets
//     minus the median offset of the step's other ranks;
//   - the base delay: every offset but each step's k largest and its smallest (0 by construction);
//   - intermittent stragglers (fit_late_probability): a gap (one of the k largest offsets minus
//     the median) counts as late when it exceeds T, the fitted base delay's quantile at
//     1 - 1/(10 S R) (what the base alone exceeds in fewer than 1 in 10 logs of this size). When
//     the gaps below T look like the base's (their median below T/3: a straggler delay's own
//     lower tail lies just under T) and there are more of them than the straggler delay fitted
//     to the gaps above T explains (expected + 3 sqrt(expected) + 1), the straggler is late
//     only in some steps: probability =
//     share of gaps above T / (1 - F(T)), the extra delay is the fit to the gaps above T, and
//     persistence is counted among the late steps. Otherwise every step is late (probability 1)
//     and the fit is the one above.
// Candidates for each distribution: none (every sample < 1 ns), constant (coefficient of
// variation < 1e-3), uniform, normal, lognormal and exponential, by moments (lognormal: moments
// of the logarithms, positive samples only); the smallest KS distance wins. Nothing here reads a
// file (experiments/config/delay_files.hpp does: load_step_log).
#pragma once

#include <string>
#include <vector>

#include "sim/delays.hpp"

namespace ssim::sim {

struct CandidateFit {
  Distribution distribution;
  double ks = 0.0;  // sup |F_empirical - F_fitted| over the samples
};

struct ComponentFit {
  std::size_t samples = 0;
  double mean = 0.0;                     // of the samples, seconds
  std::vector<CandidateFit> candidates;  // ascending KS distance; the first is chosen
  const Distribution& chosen() const { return candidates.front().distribution; }
  double ks() const { return candidates.front().ks; }
};

struct StragglerFit {
  int rank = 0;
  double persistence = 0.0;
  std::size_t slowest_steps = 0;  // steps in which it was the slowest
};

struct DelayFit {
  int ranks = 0;
  int steps = 0;
  ComponentFit base;
  std::vector<StragglerFit> stragglers;
  ComponentFit extra;  // empty (samples 0) without stragglers
  // Intermittent stragglers: the share of steps in which they are late (1: every step), and,
  // below 1, the gap that counted a step as late and how many steps were.
  double probability = 1.0;
  double late_threshold = 0.0;
  std::size_t late_steps = 0;
  DelayModel model;    // base + one PersistentStraggler per home rank with `extra`
  // The goodness-of-fit report, several lines.
  std::string report() const;
};

// The CDF of `d` at x (for the KS distance); every kind but empirical.
double distribution_cdf(const Distribution& d, double x);

// Fits the candidates to `samples` (seconds, >= 0; at least one).
ComponentFit fit_component(std::vector<double> samples);

// The intermittent part of fit_delays (above), given the per-step gaps (k per step, in step
// order) and each step's slowest rank; leaves `fit` alone when every step has a late rank.
void fit_late_probability(DelayFit& fit, const std::vector<double>& gaps,
                          const std::vector<std::size_t>& slowest);

// InputError unless every step has the same rank count (>= 2), there are >= 2 steps, and every
// time is finite and >= 0.
DelayFit fit_delays(const std::vector<std::vector<double>>& times);

}  // namespace ssim::sim
