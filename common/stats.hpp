// Order statistics shared by every report (experiment summaries, calibration residuals).
//
//   double p90 = quantile({4, 1, 3, 2}, 0.9);   // 3.7
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace ssim {

// The p-quantile of `values` (any order) by linear interpolation between order statistics,
// Hyndman and Fan's type 7 (R's and NumPy's default): with the values sorted as
// x[0] <= ... <= x[n-1] and h = p (n - 1), x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]).
// p in [0, 1]; `values` not empty (checked).
double quantile(std::vector<double> values, double p);

// Quantiles of a stream of values >= 0 in memory that does not grow with the stream: exact
// (quantile() above, to the bit) while at most `exact_limit` values have come; after that the
// values are counted in log-spaced bins (0 apart), each kBinRatio wide, and an order statistic
// is its bin's geometric centre clamped to [min, max]: within 5e-5 relative of the exact one.
// Memory is then one entry per occupied bin: ln(max/min) / ln(kBinRatio) + 2 at most, whatever
// the count (23,028 for values spread over a factor of 10).
class StreamQuantiles {
 public:
  static constexpr double kBinRatio = 1.0001;
  explicit StreamQuantiles(std::size_t exact_limit = 65536) : limit_(exact_limit) {}
  void add(double value);           // value >= 0 and finite (checked)
  double quantile(double p) const;  // p in [0, 1]; at least one value (checked)
  double max() const { return max_; }
  std::uint64_t count() const { return count_; }
  bool exact() const { return bins_.empty(); }
  // Stored entries: values while exact, occupied bins after.
  std::size_t entries() const { return exact() ? values_.size() : bins_.size(); }

 private:
  void bin(double value);
  double order_statistic(std::uint64_t k) const;  // the k-th smallest, k < count (binned)
  std::size_t limit_;
  std::vector<double> values_;
  std::map<std::int64_t, std::uint64_t> bins_;  // key: floor(log(v) / log(kBinRatio)); 0: zeros_
  std::uint64_t zeros_ = 0, count_ = 0;
  double min_ = 0, max_ = 0;
};

}  // namespace ssim
