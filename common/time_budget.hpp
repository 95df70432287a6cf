// Resource honesty, the time half: how long a command may be estimated to run, and the one way
// to refuse work that would take longer. Beside the memory budget (memory_budget.hpp): each
// command estimates its work from the problem size before it starts and refuses it above the
// limit, with the estimate and the flag that raises the limit.
//
//   const TimeBudget limit = TimeBudget::from_flag(flag_text);   // "" = the default, 1 hour
//   limit.require(estimate_seconds, "simulating ring on 4096 ranks (3.4e7 transfers, 1e6 "
//                 "iterations)", "use fewer iterations");          // throws ResourceError
#pragma once

#include <string>

namespace ssim {

// The default limit on a command's estimated time.
inline constexpr double kDefaultMaxSeconds = 3600;

class TimeBudget {
 public:
  // From a --max-time value: a duration with a unit, "90s", "30min", "2h", "1.5d" (units s, min,
  // h, d); "" for the default (kDefaultMaxSeconds). InputError on anything else, and on a
  // duration that is not > 0 or not finite.
  static TimeBudget from_flag(const std::string& text);
  static TimeBudget of(double seconds, std::string source) {
    return TimeBudget(seconds, std::move(source));
  }

  double seconds() const { return seconds_; }
  // How the limit was set, for messages: "--max-time 2h", "the default".
  const std::string& source() const { return source_; }

  // Throws ResourceError naming `what`, the estimate, the limit and `change` (what to change
  // to fit) when `estimate` (seconds, may be huge or infinite) is above the limit.
  void require(double estimate, const std::string& what, const std::string& change) const;

 private:
  TimeBudget(double seconds, std::string source) : seconds_(seconds), source_(std::move(source)) {}
  double seconds_;
  std::string source_;
};

// "45 seconds", "12 minutes", "3.2 hours", "954422 hours", "1.2e+12 hours".
std::string format_duration(double seconds);

}  // namespace ssim
