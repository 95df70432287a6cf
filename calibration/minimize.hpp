// A bounded Nelder-Mead minimizer for positive parameters, for fits whose model is a
// simulation (no derivatives, a few parameters, each evaluation a batch of simulations).
//
//   std::vector<PositiveParameter> p = {{"bandwidth", 1e9, 1e14, 4e12}, {"latency", 1e-9, 1e-3,
//   3e-6}}; MinimizeResult r = minimize_positive([](std::span<const double> x) { return f(x); }, p,
//   {}); if (!r.converged) ...;            // r.x, r.value: the best point found all the same
//
// The search runs on y = log(x), so no parameter can reach 0 or go negative, and a parameter's
// step is relative to its size; the bounds [lo, hi] are enforced by projecting every trial point
// onto the box (in log space). A parameter with lo == hi is held at that value. After the simplex
// collapses (its values within `tolerance` of each other, relative, and its vertices within
// `step_tolerance` in log space), the search restarts from a new simplex around the best point
// whose edge directions are flipped by a SplitMix64 stream seeded with `seed`; it stops when a
// restart improves the best value by less than `tolerance` (relative). Same inputs, same seed:
// same evaluations in the same order, so the result is deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ssim::calib {

struct PositiveParameter {
  std::string name;
  double lo = 0;     // > 0
  double hi = 0;     // >= lo, finite
  double start = 0;  // in [lo, hi]
};

struct MinimizeOptions {
  int max_evaluations = 4000;
  double tolerance = 1e-7;       // relative spread of the simplex's values
  double step_tolerance = 1e-5;  // largest vertex distance from the best, in log space
  double initial_step = 0.3;     // the first simplex's edges, in log space (x1.35)
  int max_restarts = 6;
  std::uint64_t seed = 0;
};

struct MinimizeResult {
  std::vector<double> x;  // the best point found, within the bounds
  double value = 0;       // f(x)
  int evaluations = 0;
  bool converged = false;  // false: max_evaluations ran out first
};

// Minimizes f over the box. InputError for an empty parameter list, a bound <= 0 or not
// finite, lo > hi ("the bounds of NAME exclude every value") or a start outside its bounds.
// f must return a finite value or +infinity (a point to avoid).
MinimizeResult minimize_positive(const std::function<double(std::span<const double>)>& f,
                                 std::span<const PositiveParameter> parameters,
                                 const MinimizeOptions& options = {});

}  // namespace ssim::calib
