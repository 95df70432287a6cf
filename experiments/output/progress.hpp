// Progress of an experiment's runs on a terminal or a log: a bar with ETA redrawn in place, or
// one line per finished run (ProgressReporter, which the runner drives), and the pieces it is
// drawn from.
//
//   ProgressReporter progress(&std::cerr, Progress::automatic, e, runs);
//   progress.finished(run, "ranks=8 ring", seconds, done);   // a line, or the bar redrawn
//   progress.close();                                         // the bar erased
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "experiments/config/experiment.hpp"

namespace ssim::experiments {

// The clock of progress and run times, and the seconds since `t` on it.
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t);

enum class Progress { automatic, bar, lines, none };

// The progress ETA's estimate of a run's cost: the --max-time guard's estimate of its
// simulation (resource_check.hpp: the schedule's transfers x iterations x the network model's
// cost per transfer, plus the per-iteration work), so that flow-model runs, large schedules
// and many iterations weigh what they cost.
double estimated_run_cost(const Experiment& e, std::size_t run);

// The progress bar for a terminal `columns` wide, without the carriage return: "[###---]
// 12/90 runs 3s  ETA 7s", ETA = elapsed x remaining cost / finished cost. At most columns - 1
// characters: the bar shrinks, then goes, so a redraw never wraps.
std::string progress_line(std::size_t done, std::size_t total, double done_cost, double total_cost,
                          double elapsed, int columns);
// "12s", "3m05s", "2h10m".
std::string duration_text(double seconds);

// Progress on stderr: a bar with ETA redrawn in place (terminals), or one line per finished run.
// The ETA weighs runs by estimated_run_cost, so a sweep whose large points come last is not
// promised the pace of its small ones.
class ProgressReporter {
 public:
  // `runs`: the run indices this invocation does (all of them, or a shard's, or the ones a
  // resumed run still lacks).
  // `quiet_for`: seconds from the start in which nothing is printed.
  ProgressReporter(std::ostream* log, Progress mode, const Experiment& e, const std::vector<std::size_t>& runs,
                   double quiet_for = 0);

  // `where`: the other process that ran it ("rank 2"), or empty.
  void finished(std::size_t run, const std::string& what, double seconds, std::size_t done,
                const std::string& where = "");

  void tick(std::size_t done);

  void close();

 private:
  void draw(std::size_t done);

  std::ostream* log_;
  Progress mode_ = Progress::none;
  std::size_t total_;
  std::vector<double> costs_;  // per run
  double total_cost_ = 0;
  double done_cost_ = 0;
  int columns_ = 80;
  Clock::time_point start_;
  double quiet_for_ = 0;
  bool drawn_ = false;
  double last_draw_ = 0;
};

}  // namespace ssim::experiments
