// The experiment runner: every run of a typed experiment (experiments/config/experiment.hpp,
// filled from YAML by load_experiment in config/config.hpp) on threads and peer processes, its
// results written as experiments/output/ writes them: results.csv, results.json and the summary
// table (output/summary.hpp).
//
//   ConfigReader in("configs/experiments/paper_scaling.yaml");
//   Experiment e = load_experiment(in);                  // every sweep point resolved and checked
//   std::cout << dry_run_listing(e);                     // the runs, without running them
//   RunnerOptions o;  o.jobs = 4;
//   ExperimentResult r = run_experiment(e, o);           // writes <output>/results.{csv,json}
//   std::cout << summary_table(e, r.points);
//
// Runs (config/experiment.hpp: run r is point r / A, algorithm r % A) are handed out in any
// order; results are written in run order whatever --jobs is.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "experiments/config/experiment.hpp"
#include "experiments/output/progress.hpp"
#include "experiments/output/summary.hpp"
#include "sim/simulation.hpp"
#include "sim/training.hpp"

namespace ssim::experiments {

struct ExperimentResult {
  std::string output;                                 // the folder written
  std::vector<std::vector<AlgorithmSummary>> points;  // [point][algorithm]
  std::vector<std::string> files;                     // written, in order
  double seconds = 0;                                 // wall time of the runs
};

// A shard of an experiment's runs: the I-th (1-based) of K. Run r belongs to shard (r mod K) + 1,
// so every shard gets a similar mix of points and algorithms.
struct Shard {
  int index = 1;
  int count = 1;
  bool owns(std::size_t run) const { return static_cast<int>(run % static_cast<std::size_t>(count)) == index - 1; }
};

// Other processes that do some of the runs (an MPI run group, experiments/runner/run_group.hpp).
// run_experiment drives them from its calling thread, beside its own threads: start, then every
// few milliseconds poll, which hands a run to each free slot of a peer and passes back what the
// peers finished. The results are the same bytes whichever process ran a run.
class RunPeers {
 public:
  virtual ~RunPeers() = default;
  struct Hooks {
    // The next run to hand out; nullopt: none (all handed out, or stopping after a failure).
    std::function<std::optional<std::size_t>()> take;
    // `peer`: the peer's name in progress lines ("rank 2").
    std::function<void(std::size_t run, sim::SimulationResult result, double seconds, const std::string& peer)> done;
    std::function<void(std::size_t run, const std::string& what)> failed;
  };
  // Waits until every peer is ready, before any run starts. InputError when a peer cannot take
  // part (it loaded another experiment, or could not load the YAML).
  virtual void start(const Experiment& e) = 0;
  // Never blocks. Returns false once every peer has been told to stop and has nothing in flight.
  virtual bool poll(const Hooks& hooks) = 0;
};

// Run r of an experiment whose points have a workload: the training job of run_config(e, r)
// (topology, network, gamma, delays, prediction, seed; steps = iterations) with the point's
// workload and the run's algorithm as its only algorithm and mode as its only mode.
sim::TrainingConfig training_config(const Experiment& e, std::size_t run);
// One training run as a run's result, step s as iteration s: completion = the step time,
// after_last_arrival = the step's exposed communication (StepRecord::exposed_comm), last_rank =
// the rank with the largest delay that step, predicted_straggler = the rank that played the
// straggler in the step's last bucket (-1 when no straggler-aware schedule ran), chosen = the
// algorithms the buckets ran under the adaptive policy (joined by '+', in bucket order; empty
// otherwise). rounds and transfers are 0 (a step runs many collectives). `steps` are the
// StepRecords of the run, as run_training handed them out.
sim::SimulationResult training_run_result(const sim::TrainingResult& result,
                                          const std::vector<sim::IterationSummary>& steps);
// Runs run r: run_simulation(run_config(e, r)) with `threads` threads, or for a point with a
// workload run_training(training_config(e, r)) as training_run_result.
sim::SimulationResult execute_run(const Experiment& e, std::size_t run, int threads);

struct RunnerOptions {
  std::string output;  // overrides Experiment::output when not empty
  int jobs = 0;        // threads; 0: std::thread::hardware_concurrency()
  // Threads inside each run (the alpha-beta dataflow pass, sim::RunOptions::threads), used only
  // when the runs go one at a time (jobs resolves to 1): otherwise the runs already occupy the
  // cores. 0: std::thread::hardware_concurrency().
  int threads = 0;
  // Re-use the runs recorded in <output>/journal.jsonl (written by an interrupted run of the same
  // experiment) and run only the missing ones.
  bool resume = false;
  // Without resume: write over a folder that holds an earlier run's journal or results (else
  // InputError). The earlier results.csv and results.json are replaced only when this run ends.
  bool force = false;
  // Run only this shard's runs; they go to <output>/journal.jsonl only (no results.csv/json):
  // `stragglesim merge` combines the shards' folders into the full results.
  std::optional<Shard> shard;
  // automatic: a bar with ETA when stderr is a terminal (as wide as COLUMNS or the terminal),
  // else one line per finished run, each flushed.
  Progress progress = Progress::automatic;
  std::ostream* log = nullptr;  // progress and notes; nullptr: std::cerr
  // Processes that share the runs (rank 0 of `mpirun -np K stragglesim run`); nullptr: this
  // process alone. With peers the runs are handed out largest estimated cost first (the
  // output stays in run order).
  RunPeers* peers = nullptr;
};

// Runs every (point, algorithm) on `jobs` threads and writes <output>/results.csv (rows of a
// point as soon as it and every point before it are done, flushed) and results.json. Every
// finished run is also appended to <output>/journal.jsonl (journal.hpp) as it completes. On the
// first failing run the remaining runs are cancelled, the finished points before it are
// written, and an InputError names the run, the point and the partial CSV. The folder is locked
// for the call (common/folder_lock.hpp: InputError naming the holder when another process has
// it); without resume or force, one that holds an earlier run's files is refused. After SIGINT
// or SIGTERM (common/interrupt.hpp) the runs in flight finish into the journal and Interrupted
// is thrown; results.csv and results.json are not written.
ExperimentResult run_experiment(const Experiment& e, const RunnerOptions& options);

// Writes results.csv and results.json into `output` from the results of every run (run index
// -> result, all present), as run_experiment would have: the same bytes in results.csv, the
// same results.json apart from its wall-clock status fields.
ExperimentResult write_experiment_results(const Experiment& e, std::vector<sim::SimulationResult> runs,
                                          const std::string& output, int jobs);

// The same runs without writing files: summaries and the raw results of every run
// ([point][algorithm]); for the advisor and tests.
struct ExperimentRuns {
  std::vector<std::vector<sim::SimulationResult>> runs;
  std::vector<std::vector<AlgorithmSummary>> summaries;
};
// Progress (as `run` reports it) goes to `log` when it is given, from `quiet_for` seconds after
// the start (a run that ends sooner prints nothing). Under an InterruptGuard (common/interrupt.hpp)
// a signal stops it after the runs in flight: ssim::Interrupted.
ExperimentRuns run_experiment_in_memory(const Experiment& e, int jobs, int threads = 1,
                                        std::ostream* log = nullptr,
                                        Progress progress = Progress::none,
                                        double quiet_for = 0);

// The threads each run gets (RunnerOptions::threads): `threads` (0: every core) when `jobs`
// (0: every core) resolves to 1 run at a time, else 1.
int threads_per_run(int jobs, int threads);

}  // namespace ssim::experiments
