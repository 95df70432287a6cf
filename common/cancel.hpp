// A per-thread cancellation point: a caller that drives a long computation on its own thread
// (the Python binding, python/) installs a check for the scope of the call; the computation
// calls cancellation_point() at safe places (run_simulation: before each iteration), which
// runs the check, and the check throws to stop it (the binding throws ssim::Interrupted on
// Python's KeyboardInterrupt). Without a check installed on the thread it costs a
// thread-local load. Worker threads of `run` never have one: the CLI stops them through
// interrupt.hpp's flag between runs.
//
//   ssim::CancellationCheck check([] { if (stop_requested()) throw ssim::Interrupted(2, "..."); });
//   sim::run_simulation(config);   // calls ssim::cancellation_point() per iteration
#pragma once

#include <functional>

namespace ssim {

class CancellationCheck {
 public:
  explicit CancellationCheck(std::function<void()> check);
  ~CancellationCheck();  // restores the check installed before (checks nest)
  CancellationCheck(const CancellationCheck&) = delete;
  CancellationCheck& operator=(const CancellationCheck&) = delete;

 private:
  std::function<void()> check_;
  CancellationCheck* previous_;
};

// Runs the innermost check installed on this thread, if any (it may throw).
void cancellation_point();

}  // namespace ssim
