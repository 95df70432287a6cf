#include "experiments/output/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "experiments/config/resource_check.hpp"

namespace ssim::experiments {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double estimated_run_cost(const Experiment& e, std::size_t run) {
  return simulation_seconds(run_config(e, run));
}

std::string duration_text(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60);
  }
  return buf;
}

std::string progress_line(std::size_t done, std::size_t total, double done_cost, double total_cost,
                          double elapsed, int columns) {
  std::string text =
      std::to_string(done) + "/" + std::to_string(total) + " runs " + duration_text(elapsed);
  if (done > 0 && done < total && done_cost > 0 && total_cost > done_cost) {
    text += "  ETA " + duration_text(elapsed * (total_cost - done_cost) / done_cost);
  }
  const int room = columns - 1;  // never the last column: some terminals wrap there
  // Room for the longest text of this total ("N/N runs 59m59s  ETA 59m59s"), so the bar keeps
  // its width from one redraw to the next.
  const int longest = static_cast<int>(2 * std::to_string(total).size()) + 25;
  const int bar = std::min(30, room - std::max(static_cast<int>(text.size()), longest) - 3);
  if (bar < 5) return text.substr(0, static_cast<std::size_t>(std::max(room, 0)));
  const int filled =
      total_cost > 0 ? static_cast<int>(bar * std::min(done_cost / total_cost, 1.0)) : 0;
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(bar - filled), '-') + "] " + text;
}

namespace {

// The width of the terminal on stderr: the COLUMNS variable when set, else the kernel's
// window size, else 80.
int terminal_columns() {
  if (const char* env = std::getenv("COLUMNS")) {
    const int c = std::atoi(env);
    if (c > 0) return c;
  }
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

ProgressReporter::ProgressReporter(std::ostream* log, Progress mode, const Experiment& e,
                                   const std::vector<std::size_t>& runs, double quiet_for)
    : log_(log), total_(runs.size()), start_(Clock::now()), quiet_for_(quiet_for) {
  if (mode == Progress::automatic) {
    mode = log == &std::cerr && isatty(STDERR_FILENO) ? Progress::bar : Progress::lines;
  }
  mode_ = log ? mode : Progress::none;
  costs_.assign(e.run_count(), 0.0);
  for (std::size_t r : runs) {
    costs_[r] = estimated_run_cost(e, r);
    total_cost_ += costs_[r];
  }
  if (mode_ == Progress::bar) columns_ = terminal_columns();
}

void ProgressReporter::finished(std::size_t run, const std::string& what, double seconds,
                                std::size_t done, const std::string& where) {
  done_cost_ += costs_[run];
  if (quiet_for_ > 0 && since(start_) < quiet_for_) return;
  if (mode_ == Progress::lines) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2fs", seconds);
    *log_ << "[" << done << "/" << total_ << "] run " << run << " " << what << ": " << buf
          << (where.empty() ? "" : " on " + where);
    if (done < total_ && done_cost_ > 0) {
      *log_ << "  ETA " << duration_text(since(start_) * (total_cost_ - done_cost_) / done_cost_);
    }
    *log_ << "\n" << std::flush;
  } else if (mode_ == Progress::bar) {
    draw(done);
  }
}

void ProgressReporter::tick(std::size_t done) {
  if (quiet_for_ > 0 && since(start_) < quiet_for_) return;
  if (mode_ == Progress::bar) draw(done);
}

void ProgressReporter::close() {
  if (mode_ == Progress::bar && drawn_) *log_ << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

void ProgressReporter::draw(std::size_t done) {
  const double elapsed = since(start_);
  // At most ten redraws a second.
  if (drawn_ && done < total_ && elapsed - last_draw_ < 0.1) return;
  last_draw_ = elapsed;
  // Carriage return, the line, then erase to the end of the line: nothing is padded, so
  // the line never reaches the last column and never wraps.
  *log_ << "\r" << progress_line(done, total_, done_cost_, total_cost_, elapsed, columns_)
        << "\x1b[K" << std::flush;
  drawn_ = true;
}

}  // namespace ssim::experiments
