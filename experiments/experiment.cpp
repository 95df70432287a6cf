#include "experiments/experiment.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/error.hpp"
#include "common/random.hpp"
#include "experiments/experiment_output.hpp"
#include "schema/result_csv.hpp"

namespace ssim::exp {

std::string Experiment::point_label(std::size_t point) const {
  if (axes.empty()) return "-";
  std::string out;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    out += (k ? " " : "") + axes[k].key + "=" + axes[k].labels[points[point].value[k]];
  }
  return out;
}

std::uint64_t point_seed(std::uint64_t seed, const std::vector<SweepAxis>& axes,
                         const std::vector<std::size_t>& value) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  auto feed = [&](const std::string& s) {
    for (unsigned char ch : s) {
      h ^= ch;
      h *= 0x100000001b3ULL;
    }
  };
  for (std::size_t k = 0; k < axes.size(); ++k)
    feed(axes[k].key + "=" + axes[k].labels[value[k]] + ";");
  return splitmix64(seed ^ h);
}

void set_iterations(Experiment& e, int iterations) {
  if (iterations < 1)
    throw InputError("iterations must be >= 1, got " + std::to_string(iterations));
  e.iterations = iterations;
  for (SweepPoint& p : e.points) p.config.iterations = iterations;
}

void set_seed(Experiment& e, std::uint64_t seed) {
  e.seed = seed;
  for (SweepPoint& p : e.points) p.config.seed = point_seed(seed, e.axes, p.value);
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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

// Progress on stderr: a bar with ETA redrawn in place (terminals), or one line per finished run.
class ProgressReporter {
 public:
  ProgressReporter(std::ostream* log, Progress mode, std::size_t total)
      : log_(log), total_(total), start_(Clock::now()) {
    if (mode == Progress::automatic) {
      mode = log == &std::cerr && isatty(STDERR_FILENO) ? Progress::bar : Progress::lines;
    }
    mode_ = log ? mode : Progress::none;
  }

  void finished(std::size_t run, const std::string& what, double seconds, std::size_t done) {
    if (mode_ == Progress::lines) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2fs", seconds);
      *log_ << "[" << done << "/" << total_ << "] run " << run << " " << what << ": " << buf
            << "\n";
    } else if (mode_ == Progress::bar) {
      draw(done);
    }
  }

  void tick(std::size_t done) {
    if (mode_ == Progress::bar) draw(done);
  }

  void close() {
    if (mode_ == Progress::bar && drawn_)
      *log_ << "\r" << std::string(79, ' ') << "\r" << std::flush;
    drawn_ = false;
  }

 private:
  void draw(std::size_t done) {
    constexpr int kWidth = 30;
    const double elapsed = since(start_);
    // At most ten redraws a second.
    if (drawn_ && done < total_ && elapsed - last_draw_ < 0.1) return;
    last_draw_ = elapsed;
    const int filled = static_cast<int>(kWidth * done / std::max<std::size_t>(total_, 1));
    std::string line = "\r[" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "] " +
                       std::to_string(done) + "/" + std::to_string(total_) + " runs " +
                       duration_text(elapsed);
    if (done > 0 && done < total_) {
      line += "  ETA " + duration_text(elapsed / static_cast<double>(done) *
                                       static_cast<double>(total_ - done));
    }
    *log_ << line << std::string(line.size() < 79 ? 79 - line.size() : 0, ' ') << std::flush;
    drawn_ = true;
  }

  std::ostream* log_;
  Progress mode_ = Progress::none;
  std::size_t total_;
  Clock::time_point start_;
  bool drawn_ = false;
  double last_draw_ = 0;
};

struct RunFailed {
  std::size_t run = 0;
  std::string what;
};

// Runs every (point, algorithm) on `jobs` threads. `deliver(point, results)` is called on the
// calling thread, in point order, as soon as a point and every point before it are done.
// On the first failure no new run starts; the runs in flight finish, the points finished
// before the failing run's point are delivered, then RunFailed is thrown (the lowest failing
// run index). Runs are handed out in run order, so every run before a failing one has started.
void run_all(const Experiment& e, int jobs, ProgressReporter& progress,
             const std::function<void(std::size_t, std::vector<sim::SimulationResult>&)>& deliver) {
  const std::size_t nalg = e.algorithms.size();
  const std::size_t total = e.run_count();
  const std::size_t npoints = e.points.size();
  std::vector<std::optional<sim::SimulationResult>> slots(total);
  std::vector<std::size_t> remaining(npoints, nalg);
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t next = 0, done = 0;
  bool stop = false;
  std::optional<RunFailed> failure;
  struct Finished {
    std::size_t run;
    double seconds;
    std::size_t done;  // runs finished with this one
  };
  std::vector<Finished> finished;  // since the last report

  auto worker = [&] {
    while (true) {
      std::size_t run = 0;
      {
        const std::lock_guard lock(mutex);
        if (stop || failure || next >= total) return;
        run = next++;
      }
      sim::SimulationConfig c = e.points[run / nalg].config;
      c.algorithm = e.algorithms[run % nalg].name;
      c.options = e.algorithms[run % nalg].options;
      const auto start = Clock::now();
      try {
        sim::SimulationResult r = sim::run_simulation(c);
        const std::lock_guard lock(mutex);
        slots[run] = std::move(r);
        --remaining[run / nalg];
        ++done;
        finished.push_back({run, since(start), done});
      } catch (const std::exception& ex) {
        const std::lock_guard lock(mutex);
        if (!failure || run < failure->run) failure = RunFailed{run, ex.what()};
      }
      changed.notify_all();
    }
  };
  const std::size_t nthreads =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(jobs, 1)), total);
  std::vector<std::thread> threads;
  // Joins the workers however this function is left (a throwing `deliver` included).
  struct Joiner {
    std::vector<std::thread>& threads;
    std::mutex& mutex;
    bool& stop;
    void join() {
      {
        const std::lock_guard lock(mutex);
        stop = true;
      }
      for (std::thread& t : threads) {
        if (t.joinable()) t.join();
      }
    }
    ~Joiner() { join(); }
  } joiner{threads, mutex, stop};
  for (std::size_t t = 0; t < nthreads; ++t) threads.emplace_back(worker);

  std::size_t next_point = 0;
  auto deliver_ready = [&](std::unique_lock<std::mutex>& lock, std::size_t limit) {
    while (next_point < limit && remaining[next_point] == 0) {
      std::vector<sim::SimulationResult> results;
      for (std::size_t a = 0; a < nalg; ++a) {
        results.push_back(std::move(*slots[next_point * nalg + a]));
        slots[next_point * nalg + a].reset();
      }
      lock.unlock();
      deliver(next_point, results);
      lock.lock();
      ++next_point;
    }
  };
  std::unique_lock lock(mutex);
  while (next_point < npoints && !failure) {
    changed.wait_for(lock, std::chrono::milliseconds(250));
    for (const Finished& f : finished) {
      progress.finished(f.run, e.point_label(f.run / nalg) + " " + e.algorithms[f.run % nalg].label,
                        f.seconds, f.done);
    }
    if (finished.empty()) progress.tick(done);
    finished.clear();
    deliver_ready(lock, npoints);
  }
  lock.unlock();
  joiner.join();
  lock.lock();
  progress.close();
  if (failure) {
    deliver_ready(lock, failure->run / nalg);
    throw *failure;
  }
}

int resolve_jobs(int jobs) {
  if (jobs > 0) return jobs;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

ExperimentRuns run_experiment_in_memory(const Experiment& e, int jobs) {
  ProgressReporter quiet(nullptr, Progress::none, e.run_count());
  ExperimentRuns out;
  out.runs.resize(e.points.size());
  out.summaries.resize(e.points.size());
  try {
    run_all(e, resolve_jobs(jobs), quiet,
            [&](std::size_t p, std::vector<sim::SimulationResult>& results) {
              out.summaries[p] = summarize_point(e, results);
              out.runs[p] = std::move(results);
            });
  } catch (const RunFailed& f) {
    throw InputError("run " + std::to_string(f.run) + " (" +
                     e.point_label(f.run / e.algorithms.size()) + ", " +
                     e.algorithms[f.run % e.algorithms.size()].label + ") failed: " + f.what);
  }
  return out;
}

ExperimentResult run_experiment(const Experiment& e, const RunnerOptions& options) {
  const std::string dir = options.output.empty() ? e.output : options.output;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot create the output folder '" + dir + "': " + ec.message());
  const std::string csv_path = (std::filesystem::path(dir) / "results.csv").string();
  const std::string json_path = (std::filesystem::path(dir) / "results.json").string();
  std::ofstream csv(csv_path, std::ios::trunc);
  if (!csv) throw InputError("cannot write '" + csv_path + "'");
  const std::vector<std::string> columns = experiment_csv_columns(e);
  for (std::size_t i = 0; i < columns.size(); ++i) csv << (i ? "," : "") << columns[i];
  csv << "\n" << std::flush;

  const int jobs = resolve_jobs(options.jobs);
  RunStatus status{.state = "complete",
                   .message = "",
                   .started = schema::utc_timestamp_now(),
                   .seconds = 0,
                   .jobs = jobs};
  ExperimentResult result;
  result.output = dir;
  result.points.resize(e.points.size());
  std::ostream* log = options.log ? options.log : &std::cerr;
  ProgressReporter progress(options.progress == Progress::none ? nullptr : log, options.progress,
                            e.run_count());
  const auto start = Clock::now();
  std::size_t delivered = 0;
  auto write_json = [&] {
    status.seconds = since(start);
    std::ofstream js(json_path, std::ios::trunc);
    if (!js) throw InputError("cannot write '" + json_path + "'");
    js << experiment_json(e, result.points, status).dump(2) << "\n";
  };
  try {
    run_all(e, jobs, progress, [&](std::size_t p, std::vector<sim::SimulationResult>& results) {
      write_point_rows(csv, e, p, results);
      csv.flush();
      if (!csv) throw InputError("writing '" + csv_path + "' failed");
      result.points[p] = summarize_point(e, results);
      ++delivered;
    });
  } catch (const RunFailed& f) {
    const std::size_t nalg = e.algorithms.size();
    status.state = "failed";
    status.message = "run " + std::to_string(f.run) + " (" + e.point_label(f.run / nalg) + ", " +
                     e.algorithms[f.run % nalg].label + ") failed: " + f.what;
    csv.close();
    write_json();
    throw InputError(status.message + "\nthe " + std::to_string(delivered * nalg) +
                     " runs of the " + std::to_string(delivered) + " sweep point" +
                     (delivered == 1 ? "" : "s") + " before it are in " + csv_path + " (partial)");
  }
  csv.close();
  result.seconds = since(start);
  write_json();
  result.files = {csv_path, json_path};
  return result;
}

}  // namespace ssim::exp
