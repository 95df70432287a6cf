#include "common/time_budget.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "common/error.hpp"

namespace ssim {

std::string format_duration(double seconds) {
  char buf[64];
  if (!(seconds < 1e300)) return "forever";
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.0f seconds", seconds);
  } else if (seconds < 3600) {
    std::snprintf(buf, sizeof buf, "%.0f minutes", seconds / 60);
  } else if (seconds < 3600 * 1e6) {
    std::snprintf(buf, sizeof buf, seconds < 36000 ? "%.1f hours" : "%.0f hours", seconds / 3600);
  } else {
    std::snprintf(buf, sizeof buf, "%.2g hours", seconds / 3600);
  }
  return buf;
}

TimeBudget TimeBudget::from_flag(const std::string& text) {
  if (text.empty()) return TimeBudget(kDefaultMaxSeconds, "the default");
  const std::string_view s = text;
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  const std::string_view unit = s.substr(static_cast<std::size_t>(end - s.data()));
  static constexpr std::array<std::pair<std::string_view, double>, 4> kUnits{
      {{"s", 1.0}, {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}}};
  double factor = 0;
  for (const auto& u : kUnits) {
    if (u.first == unit) factor = u.second;
  }
  if (ec != std::errc() || end == s.data() || factor == 0) {
    throw InputError(
        "--max-time: expected a duration with a unit (s, min, h, d), e.g. 90s, 30min, "
        "2h; got '" +
        text + "'");
  }
  if (!std::isfinite(value) || !(value > 0) || !std::isfinite(value * factor))
    throw InputError("--max-time: must be a finite duration > 0, got '" + text + "'");
  return TimeBudget(value * factor, "--max-time " + text);
}

void TimeBudget::require(double estimate, const std::string& what,
                         const std::string& change) const {
  if (estimate <= seconds_) return;
  throw ResourceError(
      what + " would take about " + format_duration(estimate) +
      " (an estimate from the problem size), more than the limit of " + format_duration(seconds_) +
      " (" + source_ + "); " + change +
      ", or raise the limit with --max-time DURATION (e.g. --max-time " +
      (estimate < 3600 * 1e6
           ? std::to_string(static_cast<long long>(std::ceil(estimate / 3600))) + "h"
           : std::string("1000h")) +
      ")");
}

}  // namespace ssim
