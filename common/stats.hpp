// Order statistics shared by every report (experiment summaries, calibration residuals).
//
//   double p90 = quantile({4, 1, 3, 2}, 0.9);   // 3.7
#pragma once

#include <vector>

namespace ssim {

// The p-quantile of `values` (any order) by linear interpolation between order statistics,
// Hyndman and Fan's type 7 (R's and NumPy's default): with the values sorted as
// x[0] <= ... <= x[n-1] and h = p (n - 1), x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
// p in [0, 1]; `values` not empty (checked).
double quantile(std::vector<double> values, double p);

}  // namespace ssim
