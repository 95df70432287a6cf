#include "experiments/runner/experiment.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <new>
#include <thread>

#include "common/error.hpp"
#include "common/folder_lock.hpp"
#include "common/interrupt.hpp"
#include "common/output_file.hpp"
#include "experiments/config/resource_check.hpp"
#include "experiments/output/experiment_output.hpp"
#include "experiments/runner/journal.hpp"
#include "schema/result_csv.hpp"

namespace ssim::experiments {

namespace {

// run_all stopped on a signal (common/interrupt.hpp) before every run was done.
struct Stopped {
  int signal = 0;
  std::size_t done = 0;
  std::size_t total = 0;
};

struct RunFailed {
  std::size_t run = 0;
  std::string what;
  std::exception_ptr error;  // to report the failure in its own class (common/error.hpp)
};

// Throws `message` as an exception of the class of `error`: a run that ran out of memory or hit
// a broken invariant is not reported as bad input.
[[noreturn]] void rethrow_as(const std::exception_ptr& error, const std::string& message) {
  if (!error) throw InputError(message);  // a peer process's failure: its message only
  try {
    std::rethrow_exception(error);
  } catch (const InputError&) {
    throw InputError(message);
  } catch (const ResourceError&) {
    throw ResourceError(message);
  } catch (const std::bad_alloc&) {
    throw ResourceError(message + " (out of memory)");
  } catch (...) {
    throw InternalError(message);
  }
}

// Runs the runs listed in `todo` on `jobs` threads (and `peers`, when given); `slots` holds a
// result for every run already done (resumed) and receives the new ones. `on_run(run, result)`
// is called under the runner's lock as each run finishes (the journal). `deliver(point,
// results)` is called on the calling thread, in point order, as soon as a point and every
// point before it are complete. On the first failure no new run starts; the runs in flight
// finish, the points finished before the failing run's point are delivered, then RunFailed is
// thrown (the lowest failing run index). Runs are handed out in `todo` order: when it is
// ascending, every run before a failing one has started. With peers, the calling thread also
// polls them every 2 ms; after the last run or a failure it polls until they are all stopped
// and have handed back every run they had. After SIGINT or SIGTERM (common/interrupt.hpp) no
// new run starts; the runs in flight finish (and reach `on_run`), then Stopped is thrown.
void run_all(const Experiment& e, int jobs, ProgressReporter& progress,
             std::vector<std::optional<sim::SimulationResult>>& slots, const std::vector<std::size_t>& todo,
             const std::function<void(std::size_t, const sim::SimulationResult&)>& on_run,
             const std::function<void(std::size_t, std::vector<sim::SimulationResult>&)>& deliver,
             RunPeers* peers = nullptr, int run_threads = 1) {
  const std::size_t nalg = e.algorithms.size();
  const std::size_t total = todo.size();
  const std::size_t npoints = e.points.size();
  SSIM_CHECK(slots.size() == e.run_count(), "one slot per run");
  std::vector<std::size_t> remaining(npoints, 0);
  for (std::size_t run = 0; run < slots.size(); ++run) {
    if (!slots[run]) ++remaining[run / nalg];
  }
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t next = 0, done = 0;
  bool stop = false;
  std::optional<RunFailed> failure;
  struct Finished {
    std::size_t run;
    double seconds;
    std::size_t done;  // runs finished with this one
    std::string where;  // the peer that ran it; empty: this process
  };
  std::vector<Finished> finished;  // since the last report

  // Under the lock.
  auto take = [&]() -> std::optional<std::size_t> {
    if (stop || failure || next >= total || interrupt_signal() != 0) return std::nullopt;
    return todo[next++];
  };
  auto record = [&](std::size_t run, sim::SimulationResult r, double seconds, const std::string& where) {
    on_run(run, r);
    slots[run] = std::move(r);
    --remaining[run / nalg];
    ++done;
    finished.push_back({run, seconds, done, where});
  };
  // `error` is empty for a failure reported by a peer process (only its message travels).
  auto record_failure = [&](std::size_t run, const std::string& what, std::exception_ptr error = nullptr) {
    if (!failure || run < failure->run) failure = RunFailed{run, what, std::move(error)};
  };

  auto worker = [&] {
    while (true) {
      std::optional<std::size_t> run;
      {
        const std::lock_guard lock(mutex);
        run = take();
        if (!run) return;
      }
      const auto start = Clock::now();
      try {
        sim::SimulationResult r = execute_run(e, *run, run_threads);
        const std::lock_guard lock(mutex);
        record(*run, std::move(r), since(start), "");
      } catch (const std::exception& ex) {
        const std::lock_guard lock(mutex);
        record_failure(*run, ex.what(), std::current_exception());
      }
      changed.notify_all();
    }
  };
  // The peers' hooks run on this thread with the lock released by the caller of poll.
  const RunPeers::Hooks hooks{
      .take =
          [&] {
            const std::lock_guard lock(mutex);
            return take();
          },
      .done =
          [&](std::size_t run, sim::SimulationResult r, double seconds, const std::string& peer) {
            const std::lock_guard lock(mutex);
            record(run, std::move(r), seconds, peer);
          },
      .failed =
          [&](std::size_t run, const std::string& what) {
            const std::lock_guard lock(mutex);
            record_failure(run, what);
          }};
  // Polls the peers with the lock released; false once they are all stopped.
  auto poll_peers = [&](std::unique_lock<std::mutex>& lock) {
    lock.unlock();
    const bool busy = peers->poll(hooks);
    lock.lock();
    return busy;
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
  if (peers) {
    // Every peer ready first (a peer that cannot take part stops the run before it starts),
    // and given its first runs, the largest, before this process's threads take theirs.
    peers->start(e);
    peers->poll(hooks);
  }
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
  // Reports the runs finished since the last report (under the lock).
  auto report = [&] {
    for (const Finished& f : finished) {
      progress.finished(f.run, e.point_label(f.run / nalg) + " " + e.algorithms[f.run % nalg].label,
                        f.seconds, f.done, f.where);
    }
    if (finished.empty()) progress.tick(done);
    finished.clear();
  };
  std::unique_lock lock(mutex);
  deliver_ready(lock, npoints);
  while (done < total && !failure && interrupt_signal() == 0) {
    changed.wait_for(lock, std::chrono::milliseconds(peers ? 2 : 250));
    if (peers) poll_peers(lock);
    report();
    deliver_ready(lock, npoints);
  }
  if (peers) {
    // Every run is done, or one failed: take() hands out nothing more; collect the runs the
    // peers still have, so that the failure reported is the lowest failing run of all.
    stop = true;
    while (poll_peers(lock)) {
      changed.wait_for(lock, std::chrono::milliseconds(2));
      report();
    }
  }
  lock.unlock();
  joiner.join();
  lock.lock();
  // Runs that finished while the last points were delivered, or after a failure: every
  // finished run gets its line.
  if (!finished.empty()) report();
  progress.close();
  if (!failure) deliver_ready(lock, npoints);
  if (failure) {
    deliver_ready(lock, failure->run / nalg);
    throw *failure;
  }
  if (done < total) throw Stopped{interrupt_signal(), done, total};
}

int resolve_jobs(int jobs) {
  if (jobs > 0) return jobs;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

int threads_per_run(int jobs, int threads) {
  return resolve_jobs(jobs) == 1 ? resolve_jobs(threads) : 1;
}

ExperimentRuns run_experiment_in_memory(const Experiment& e, int jobs, int threads,
                                        std::ostream* log, Progress progress, double quiet_for) {
  std::vector<std::size_t> todo(e.run_count());
  for (std::size_t r = 0; r < todo.size(); ++r) todo[r] = r;
  ProgressReporter quiet(log, log ? progress : Progress::none, e, todo, quiet_for);
  ExperimentRuns out;
  out.runs.resize(e.points.size());
  out.summaries.resize(e.points.size());
  std::vector<std::optional<sim::SimulationResult>> slots(e.run_count());
  try {
    run_all(e, resolve_jobs(jobs), quiet, slots, todo, [](std::size_t, const sim::SimulationResult&) {},
            [&](std::size_t p, std::vector<sim::SimulationResult>& results) {
              out.summaries[p] = summarize_point(e, results);
              out.runs[p] = std::move(results);
            },
            nullptr, threads_per_run(jobs, threads));
  } catch (const RunFailed& f) {
    rethrow_as(f.error,
               "run " + std::to_string(f.run) + " (" + e.point_label(f.run / e.algorithms.size()) +
                   ", " + e.algorithms[f.run % e.algorithms.size()].label + ") failed: " + f.what);
  } catch (const Stopped& s) {  // only where a caller installed an InterruptGuard (Python)
    throw Interrupted(s.signal, signal_name(s.signal) + ": stopped with " + std::to_string(s.done) +
                                    " of " + std::to_string(s.total) + " runs done");
  }
  return out;
}

namespace {

// results.csv and results.json of one output folder. results.csv is written point by point to a
// temporary that takes its name when the run ends (common/output_file.hpp), so the name never
// holds a cut file; a write error throws OutputError (exit 3) and leaves neither file behind.
class OutputFiles {
 public:
  OutputFiles(const Experiment& e, const std::string& dir, int jobs)
      : e_(e),
        csv_path_((std::filesystem::path(dir) / "results.csv").string()),
        json_path_((std::filesystem::path(dir) / "results.json").string()),
        csv_(csv_path_),
        status_{.state = "complete", .message = "", .started = schema::utc_timestamp_now(), .seconds = 0, .jobs = jobs},
        start_(Clock::now()) {
    const std::vector<std::string> columns = experiment_csv_columns(e);
    for (std::size_t i = 0; i < columns.size(); ++i) csv_.stream() << (i ? "," : "") << columns[i];
    csv_.stream() << "\n";
    csv_.flush();
    result_.output = dir;
    result_.points.resize(e.points.size());
  }
  void point(std::size_t p, std::vector<sim::SimulationResult>& results) {
    write_point_rows(csv_.stream(), e_, p, results);
    csv_.flush();
    result_.points[p] = summarize_point(e_, results);
    ++delivered_;
  }
  // After a failed run: the points delivered so far, and results.json with the failure. Returns
  // "" when both were written, else the write error.
  std::string fail(const std::string& message) {
    status_.state = "failed";
    status_.message = message;
    try {
      csv_.commit();
      write_json();
    } catch (const OutputError& e) {
      return e.what();
    }
    return "";
  }
  // results.csv takes its name first: a results.json that cannot be written (a full disk)
  // leaves the whole results.csv (CliFullDisk), and a kill between the two leaves results.csv
  // alone, its sweep finished (docs/cli.md).
  ExperimentResult finish() {
    csv_.commit();
    result_.seconds = since(start_);
    write_json();
    result_.files = {csv_path_, json_path_};
    return std::move(result_);
  }
  std::size_t delivered() const { return delivered_; }
  const std::string& csv_path() const { return csv_path_; }

 private:
  void write_json() {
    status_.seconds = since(start_);
    write_output_file(json_path_, experiment_json(e_, result_.points, status_).dump(2) + "\n");
  }

  const Experiment& e_;
  std::string csv_path_, json_path_;
  OutputFile csv_;
  RunStatus status_;
  ExperimentResult result_;
  Clock::time_point start_;
  std::size_t delivered_ = 0;
};

void make_folder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot create the output folder '" + dir + "': " + ec.message());
}

}  // namespace

// Without --resume or --force, a folder that holds a journal or results is not written over.
void refuse_earlier_results(const std::string& dir) {
  std::string found;
  for (const char* name : {"journal.jsonl", "results.csv", "results.json"}) {
    std::error_code ec;
    if (std::filesystem::symlink_status(std::filesystem::path(dir) / name, ec).type() !=
        std::filesystem::file_type::not_found)
      found += (found.empty() ? "" : ", ") + std::string(name);
  }
  if (!found.empty()) {
    throw InputError(
        dir + ": holds an earlier run's files (" + found +
        "): add --resume to finish or reuse that run, --force to replace it (its results stay "
        "until the new run succeeds), or give another output folder");
  }
}

ExperimentResult run_experiment(const Experiment& e, const RunnerOptions& options) {
  const std::string dir = options.output.empty() ? e.output : options.output;
  make_folder(dir);
  const FolderLock lock(dir);  // one process at a time writes a folder
  const std::string journal_path = (std::filesystem::path(dir) / "journal.jsonl").string();
  std::ostream* log = options.log ? options.log : &std::cerr;
  if (!options.resume && !options.force) refuse_earlier_results(dir);

  std::vector<std::optional<sim::SimulationResult>> slots(e.run_count());
  bool append = false;
  if (options.resume) {
    const Journal j = read_journal(journal_path);
    const bool same_shard = (!j.header.shard && !options.shard) ||
                            (j.header.shard && options.shard && j.header.shard->index == options.shard->index &&
                             j.header.shard->count == options.shard->count);
    if (!same_shard) {
      throw InputError(journal_path + ": the journal is of " +
                       (j.header.shard ? "shard " + std::to_string(j.header.shard->index) + "/" +
                                             std::to_string(j.header.shard->count)
                                       : std::string("the whole experiment")) +
                       "; resume it with the same --shard");
    }
    JournalRuns found = journal_runs(j, e, journal_path);
    for (auto& [run, result] : found.runs) slots[run] = std::move(result);
    // Damage is named even with --quiet: those runs are run again, not trusted.
    constexpr std::size_t kShown = 20;
    for (std::size_t i = 0; i < found.damaged.size() && i < kShown; ++i)
      *log << "stragglesim run: " << found.damaged[i] << "\n";
    if (found.damaged.size() > kShown)
      *log << "stragglesim run: ... and " << found.damaged.size() - kShown
           << " more damaged lines\n";
    if (!found.damaged.empty()) {
      *log << "stragglesim run: " << found.damaged.size() << " damaged journal line"
           << (found.damaged.size() == 1 ? "" : "s") << " ignored: their runs are run again\n";
    }
    if (options.progress != Progress::none) {
      *log << "stragglesim run: resuming: " << found.runs.size() << " of " << e.run_count()
           << " runs already in " << journal_path
           << (j.truncated_tail ? " (its cut-off last line is ignored)" : "") << "\n";
    }
    append = true;
    if (j.truncated_tail || !found.damaged.empty()) {
      // Rewrite the journal with the good runs only, so that later appends start on a line of
      // their own and no damaged line is read again.
      JournalWriter rewrite(journal_path, j.header, e, false);
      for (std::size_t run = 0; run < slots.size(); ++run) {
        if (slots[run]) rewrite.append(run, *slots[run]);
      }
    }
  }
  std::vector<std::size_t> todo;
  for (std::size_t run = 0; run < e.run_count(); ++run) {
    if (!slots[run] && (!options.shard || options.shard->owns(run))) todo.push_back(run);
  }
  if (options.peers) {
    // Largest estimated cost first (ties in run order), so that the long runs do not start last.
    std::stable_sort(todo.begin(), todo.end(), [&](std::size_t a, std::size_t b) {
      return estimated_run_cost(e, a) > estimated_run_cost(e, b);
    });
  }
  JournalWriter journal(journal_path, header_for(e, options.shard), e, append);

  const int jobs = resolve_jobs(options.jobs);
  ProgressReporter progress(options.progress == Progress::none ? nullptr : log, options.progress, e, todo);
  const auto on_run = [&](std::size_t run, const sim::SimulationResult& r) { journal.append(run, r); };
  const std::size_t owned = options.shard
                                ? (e.run_count() + static_cast<std::size_t>(options.shard->count) -
                                   static_cast<std::size_t>(options.shard->index)) /
                                      static_cast<std::size_t>(options.shard->count)
                                : e.run_count();
  const auto stopped = [&](const Stopped& s) {
    return Interrupted(
        s.signal,
        signal_name(s.signal) + ": stopped with " + std::to_string(owned - (s.total - s.done)) +
            " of " + std::to_string(owned) + " runs done, each in " + journal_path +
            (options.shard ? std::string() : "; results.csv and results.json not written"));
  };

  if (options.shard) {
    // A shard writes its journal only: its points are incomplete until the shards are merged.
    const auto start = Clock::now();
    try {
      run_all(e, jobs, progress, slots, todo, on_run, [](std::size_t, std::vector<sim::SimulationResult>&) {},
              options.peers, threads_per_run(jobs, options.threads));
    } catch (const RunFailed& f) {
      const std::size_t nalg = e.algorithms.size();
      rethrow_as(f.error, "run " + std::to_string(f.run) + " (" + e.point_label(f.run / nalg) + ", " +
                              e.algorithms[f.run % nalg].label + ") failed: " + f.what +
                              "\nthe runs finished before it are in " + journal_path + "; fix the cause and add --resume");
    } catch (const Stopped& s) {
      throw stopped(s);
    }
    ExperimentResult result;
    result.output = dir;
    result.seconds = since(start);
    result.files = {journal_path};
    return result;
  }

  // --force over earlier results: they are replaced only by a run that succeeds.
  bool keep_earlier = false;
  for (const char* name : {"results.csv", "results.json"}) {
    std::error_code ec;
    keep_earlier = keep_earlier || std::filesystem::exists(std::filesystem::path(dir) / name, ec);
  }
  OutputFiles files(e, dir, jobs);
  try {
    run_all(e, jobs, progress, slots, todo, on_run,
            [&](std::size_t p, std::vector<sim::SimulationResult>& results) { files.point(p, results); },
            options.peers, threads_per_run(jobs, options.threads));
  } catch (const Stopped& s) {
    throw stopped(s);  // results.csv's temporary goes with `files`
  } catch (const RunFailed& f) {
    const std::size_t nalg = e.algorithms.size();
    const std::string message = "run " + std::to_string(f.run) + " (" + e.point_label(f.run / nalg) + ", " +
                                e.algorithms[f.run % nalg].label + ") failed: " + f.what;
    if (keep_earlier) {
      rethrow_as(f.error, message + "\nthe earlier results.csv and results.json in " + dir +
                              " are left as they were; every finished run of this one is in " + journal_path);
    }
    if (const std::string not_written = files.fail(message); !not_written.empty()) {
      rethrow_as(f.error, message + "\nthe partial results could not be written (" + not_written +
                              "); every finished run is in " + journal_path);
    }
    rethrow_as(f.error, message + "\nthe " + std::to_string(files.delivered() * nalg) + " runs of the " +
                            std::to_string(files.delivered()) + " sweep point" + (files.delivered() == 1 ? "" : "s") +
                            " before it are in " + files.csv_path() + " (partial); every finished run is in " +
                            journal_path);
  }
  return files.finish();
}

ExperimentResult write_experiment_results(const Experiment& e, std::vector<sim::SimulationResult> runs,
                                          const std::string& output, int jobs) {
  SSIM_CHECK(runs.size() == e.run_count(), "a result for every run");
  make_folder(output);
  OutputFiles files(e, output, jobs);
  const std::size_t nalg = e.algorithms.size();
  for (std::size_t p = 0; p < e.points.size(); ++p) {
    std::vector<sim::SimulationResult> results(std::make_move_iterator(runs.begin() + static_cast<std::ptrdiff_t>(p * nalg)),
                                               std::make_move_iterator(runs.begin() + static_cast<std::ptrdiff_t>((p + 1) * nalg)));
    files.point(p, results);
  }
  return files.finish();
}

}  // namespace ssim::experiments
