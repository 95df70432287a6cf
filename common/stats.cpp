#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

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

void StreamQuantiles::add(double value) {
  SSIM_CHECK(value >= 0 && std::isfinite(value), "StreamQuantiles takes finite values >= 0");
  min_ = count_ == 0 ? value : std::min(min_, value);
  max_ = count_ == 0 ? value : std::max(max_, value);
  ++count_;
  if (bins_.empty() && zeros_ == 0 && values_.size() < limit_) {
    values_.push_back(value);
    return;
  }
  if (!values_.empty()) {
    for (const double v : values_) bin(v);
    values_.clear();
    values_.shrink_to_fit();
  }
  bin(value);
}

void StreamQuantiles::bin(double value) {
  if (value == 0) {
    ++zeros_;
    // An empty map would read as "exact": zeros are kept apart but mark the switch too.
    bins_.try_emplace(std::numeric_limits<std::int64_t>::min(), 0);
    return;
  }
  ++bins_[static_cast<std::int64_t>(std::floor(std::log(value) / std::log(kBinRatio)))];
}

double StreamQuantiles::order_statistic(std::uint64_t k) const {
  if (k < zeros_) return 0.0;
  std::uint64_t seen = zeros_;
  for (const auto& [key, n] : bins_) {
    if (key == std::numeric_limits<std::int64_t>::min()) continue;
    seen += n;
    if (k < seen) {
      const double centre = std::exp((static_cast<double>(key) + 0.5) * std::log(kBinRatio));
      return std::clamp(centre, min_, max_);
    }
  }
  return max_;
}

double StreamQuantiles::quantile(double p) const {
  SSIM_CHECK(count_ > 0, "quantile of no values");
  SSIM_CHECK(p >= 0 && p <= 1, "quantile level must lie in [0, 1]");
  if (exact()) return ssim::quantile(values_, p);
  const double h = p * static_cast<double>(count_ - 1);
  const auto lo = static_cast<std::uint64_t>(std::floor(h));
  const std::uint64_t hi = std::min(lo + 1, count_ - 1);
  const double a = order_statistic(lo), b = hi == lo ? a : order_statistic(hi);
  return a + (h - static_cast<double>(lo)) * (b - a);
}

}  // namespace ssim
