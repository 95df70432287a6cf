// Stopping cleanly on SIGINT (Ctrl-C) or SIGTERM: the one signal handler of the programs.
//
// A command whose work can stop part-way (`run`'s sweep, a trace being written) installs it for
// its lifetime. The first signal only sets a flag, which the work checks at safe points (between
// runs, between trace events) before it stops: the journal stays whole, partial outputs are
// removed, and the command throws ssim::Interrupted (exit 128 + the signal). A second signal
// ends the program at once (the handler is installed with SA_RESETHAND).
//
//   ssim::InterruptGuard guard("stragglesim run: stopping after the runs in flight");
//   while (...) { if (ssim::interrupt_signal() != 0) break; ... }
//   ssim::throw_if_interrupted("the trace is not written");
#pragma once

#include <string>

namespace ssim {

class InterruptGuard {
 public:
  // `note`: printed on stderr (by the handler) when the first signal arrives, before the work
  // has stopped, followed by a line saying that another signal stops at once.
  explicit InterruptGuard(const std::string& note);
  ~InterruptGuard();  // restores the previous dispositions
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The signal received since a guard was installed (SIGINT, SIGTERM), or 0.
int interrupt_signal();
// "SIGINT", "SIGTERM".
std::string signal_name(int signal_number);
// Throws Interrupted("SIGNAL: what") when a signal was received.
void throw_if_interrupted(const std::string& what);
// Forgets the signal received, for a process that goes on after an interrupted command (the
// Python package: a notebook runs the next cell).
void clear_interrupt_signal();

}  // namespace ssim
