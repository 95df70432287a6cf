#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "common/error.hpp"

namespace ssim {

double quantile(std::vector<double> values, double p) {
  SSIM_CHECK(!values.empty(), "quantile of no values");
  SSIM_CHECK(p >= 0 && p <= 1, "quantile level must lie in [0, 1]");
  std::sort(values.begin(), values.end());
  const double h = p * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

}  // namespace ssim
